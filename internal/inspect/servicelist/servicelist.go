package servicelist

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// List makes the Service LIST of every namespace with c, a REST client of
// the core/v1 API, and decodes each Service as its bytes arrive. client-go would read the whole body (tens of megabytes at
// 10,000 Services) into one growing buffer and decode it only then, while
// the API server, which streams it out over hundreds of milliseconds, has
// nothing left to do: here the decoding overlaps the transfer. The wire
// format is the one client-go's protobuf serializer reads; a body in
// another encoding is decoded by client-go's own decoders.
//
// each, if not nil, is given every Service once it is decoded, on the
// goroutine that decodes, which waits for it: it may keep the pointer
// and read the Service from any goroutine, and must not change it.
func List(ctx context.Context, c rest.Interface, each func(*corev1.Service)) ([]corev1.Service, error) {
	body, err := c.Get().Resource("services").
		VersionedParams(&metav1.ListOptions{}, scheme.ParameterCodec).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	r := bufio.NewReaderSize(body, 64<<10)
	if magic, err := r.Peek(len(protobufMagic)); err != nil || !bytes.Equal(magic, protobufMagic) {
		items, err := decodeWhole(r)
		if err == nil && each != nil {
			for i := range items {
				each(&items[i])
			}
		}
		return items, err
	}
	return decodeServiceList(r, each)
}

// protobufMagic starts every protobuf body of the API server.
var protobufMagic = []byte{'k', '8', 's', 0}

// decodeWhole decodes a body that is not protobuf (JSON, or whatever
// client-go's decoders recognize) the usual way.
func decodeWhole(r io.Reader) ([]corev1.Service, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read the Service list: %w", err)
	}
	var list corev1.ServiceList
	if err := runtime.DecodeInto(scheme.Codecs.UniversalDecoder(corev1.SchemeGroupVersion), data, &list); err != nil {
		return nil, fmt.Errorf("decode the Service list: %w", err)
	}
	return list.Items, nil
}

// Field numbers of the two messages around the Services: the API
// server's envelope (runtime.Unknown) and the list in it.
const (
	unknownTypeMeta = 1
	unknownRaw      = 2
	listItems       = 2
)

// Bounds on a length the body declares, so that a corrupt one fails
// instead of allocating: a TypeMeta is two short strings, and a Service
// is bounded by what etcd stores (1.5 MiB by default).
const (
	maxTypeMeta = 64 << 10
	maxService  = 64 << 20
)

// errNotServiceList means the envelope holds something else.
var errNotServiceList = errors.New("not a ServiceList")

// decodeServiceList reads the envelope, checks it holds a v1 ServiceList
// and decodes its items one by one. Other fields are skipped, as a
// protobuf decoder skips fields it does not know.
func decodeServiceList(br *bufio.Reader, each func(*corev1.Service)) ([]corev1.Service, error) {
	r := &wireReader{r: br, each: each}
	if err := r.skip(uint64(len(protobufMagic))); err != nil {
		return nil, wireError(err)
	}
	var (
		items  []corev1.Service
		typed  bool
		listed bool
	)
	for {
		field, wire, err := r.tag()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, wireError(err)
		}
		switch {
		case field == unknownTypeMeta && wire == wireBytes:
			if err := r.typeMeta(); err != nil {
				return nil, err
			}
			typed = true
		case field == unknownRaw && wire == wireBytes && typed:
			if items, err = r.items(); err != nil {
				return nil, err
			}
			listed = true
		default:
			if err := r.skipField(wire); err != nil {
				return nil, wireError(err)
			}
		}
	}
	switch {
	case !typed:
		return nil, fmt.Errorf("decode the Service list: %w: the body names no kind", errNotServiceList)
	case !listed:
		return nil, wireError(io.ErrUnexpectedEOF)
	}
	return items, nil
}

func wireError(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("decode the Service list: %w", err)
}

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// wireReader reads protobuf fields from a stream and counts the bytes it
// has consumed, which is how a message's end is found.
type wireReader struct {
	r   *bufio.Reader
	n   uint64
	buf []byte
	// svc and meta are where withoutManagedFields writes.
	svc, meta []byte
	// each is List's: given each Service once decoded.
	each func(*corev1.Service)
}

func (w *wireReader) ReadByte() (byte, error) {
	b, err := w.r.ReadByte()
	if err == nil {
		w.n++
	}
	return b, err
}

func (w *wireReader) varint() (uint64, error) {
	return binary.ReadUvarint(w)
}

// tag reads a field's number and wire type; io.EOF only between fields.
func (w *wireReader) tag() (field uint64, wire int, err error) {
	start := w.n
	t, err := w.varint()
	if err != nil {
		if w.n != start && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, err
	}
	return t >> 3, int(t & 7), nil
}

// bytes reads a length-delimited field of at most limit bytes into the
// reader's buffer, valid until the next call.
func (w *wireReader) bytes(limit uint64) ([]byte, error) {
	n, err := w.varint()
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("a field of %d bytes where at most %d fit", n, limit)
	}
	if uint64(cap(w.buf)) < n {
		w.buf = make([]byte, n)
	}
	w.buf = w.buf[:n]
	if _, err := io.ReadFull(w.r, w.buf); err != nil {
		return nil, err
	}
	w.n += n
	return w.buf, nil
}

func (w *wireReader) skip(n uint64) error {
	for n > 0 {
		step := min(n, 1<<30)
		done, err := w.r.Discard(int(step))
		w.n += uint64(done)
		if err != nil {
			return err
		}
		n -= step
	}
	return nil
}

func (w *wireReader) skipField(wire int) error {
	switch wire {
	case wireVarint:
		_, err := w.varint()
		return err
	case wireFixed64:
		return w.skip(8)
	case wireFixed32:
		return w.skip(4)
	case wireBytes:
		n, err := w.varint()
		if err != nil {
			return err
		}
		return w.skip(n)
	}
	return fmt.Errorf("unknown protobuf wire type %d", wire)
}

// typeMeta reads the envelope's kind: only a v1 ServiceList is decoded.
func (w *wireReader) typeMeta() error {
	b, err := w.bytes(maxTypeMeta)
	if err != nil {
		return wireError(err)
	}
	var tm runtime.TypeMeta
	if err := tm.Unmarshal(b); err != nil {
		return wireError(err)
	}
	if tm.APIVersion != "v1" || tm.Kind != "ServiceList" {
		return fmt.Errorf("decode the Service list: %w: %s %s", errNotServiceList, tm.APIVersion, tm.Kind)
	}
	return nil
}

// items decodes the ServiceList message that follows, keeping only its
// items.
func (w *wireReader) items() ([]corev1.Service, error) {
	size, err := w.varint()
	if err != nil {
		return nil, wireError(err)
	}
	end := w.n + size
	var items []corev1.Service
	for w.n < end {
		field, wire, err := w.tag()
		if err != nil {
			return nil, wireError(err)
		}
		if field != listItems || wire != wireBytes {
			if err := w.skipField(wire); err != nil {
				return nil, wireError(err)
			}
			continue
		}
		b, err := w.bytes(min(maxService, end-w.n))
		if err != nil {
			return nil, wireError(err)
		}
		if b, err = w.withoutManagedFields(b); err != nil {
			return nil, fmt.Errorf("decode Service %d of the list: %w", len(items)+1, err)
		}
		if items == nil {
			items = make([]corev1.Service, 0, expectedItems(size, len(b)))
		}
		// Decoded in place: a Service is large. Unmarshal copies what it
		// keeps, so the buffer is reused.
		items = append(items, corev1.Service{})
		svc := &items[len(items)-1]
		if err := svc.Unmarshal(b); err != nil {
			return nil, fmt.Errorf("decode Service %d of the list: %w", len(items), err)
		}
		// Should items grow past this, svc stays valid: the Services
		// before it are copied, never changed.
		if w.each != nil {
			w.each(svc)
		}
	}
	if w.n != end {
		return nil, wireError(errors.New("the list's last field runs past its end"))
	}
	return items, nil
}

// expectedItems guesses how many Services a list of size bytes holds from
// the size of its first one, with some room: growing the slice of
// Services by appending copies megabytes into memory fresh from the
// system several times over, which costs more than decoding them.
func expectedItems(size uint64, first int) int {
	return int(min(size/uint64(first+3)*5/4+16, 1<<20))
}

// Field numbers of a Service's metadata and of its managedFields.
const (
	serviceMetadata   = 1
	metaManagedFields = 17
)

// withoutManagedFields returns a Service's bytes without the
// managedFields of its metadata, valid until the next call. The
// controller strips them from its cache and decides nothing from them;
// at 10,000 Services they are most of the bytes and most of the objects
// decoding makes.
func (w *wireReader) withoutManagedFields(b []byte) ([]byte, error) {
	w.svc = w.svc[:0]
	for len(b) > 0 {
		field, n, err := nextField(b)
		if err != nil {
			return nil, err
		}
		num, typ, tagLen := protowire.ConsumeTag(field)
		if num != serviceMetadata || typ != protowire.BytesType {
			w.svc = append(w.svc, field...)
			b = b[n:]
			continue
		}
		meta, _ := protowire.ConsumeBytes(field[tagLen:])
		if w.meta, err = dropField(w.meta[:0], meta, metaManagedFields); err != nil {
			return nil, err
		}
		w.svc = protowire.AppendBytes(protowire.AppendTag(w.svc, num, typ), w.meta)
		b = b[n:]
	}
	return w.svc, nil
}

// nextField returns the first field of b, tag included, and its length.
func nextField(b []byte) ([]byte, int, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return nil, 0, protowire.ParseError(n)
	}
	m := protowire.ConsumeFieldValue(num, typ, b[n:])
	if m < 0 {
		return nil, 0, protowire.ParseError(m)
	}
	return b[:n+m], n + m, nil
}

// dropField appends to dst the fields of the message b but those numbered
// drop.
func dropField(dst, b []byte, drop protowire.Number) ([]byte, error) {
	for len(b) > 0 {
		field, n, err := nextField(b)
		if err != nil {
			return nil, err
		}
		if num, _, _ := protowire.ConsumeTag(field); num != drop {
			dst = append(dst, field...)
		}
		b = b[n:]
	}
	return dst, nil
}
