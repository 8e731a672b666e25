package lab

import (
	"fmt"
	"net"
	"sync"

	"github.com/steadylb/steadylb/test/netns"
)

// forwarder relays TCP connections accepted inside a node namespace to
// the API server on the host's loopback. Its listening socket is created
// on a thread that has entered the namespace, and stays there; accepting
// and relaying run on ordinary goroutines, whose threads are in the
// host's namespace, so the dial to the API server leaves from the host.
//
// cut stops every byte in both directions without closing anything, as a
// dead link would; restore lets them through again.
type forwarder struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	open   chan struct{} // closed while bytes may move
	conns  map[net.Conn]struct{}
	closed bool
}

// forward listens in ns on 127.0.0.1 at target's port.
func forward(ns *netns.NS, target string) (*forwarder, error) {
	_, port, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("lab: forward to %s: %w", target, err)
	}
	f := &forwarder{target: target, open: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(f.open)
	err = ns.Run(func() (err error) {
		f.ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("lab: listen for the API server in %s: %w", ns.Name, err)
	}
	f.wg.Go(f.accept)
	return f, nil
}

func (f *forwarder) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		f.wg.Go(func() { f.relay(c) })
	}
}

func (f *forwarder) relay(in net.Conn) {
	out, err := net.Dial("tcp", f.target)
	if err != nil {
		in.Close()
		return
	}
	if !f.track(in, out) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { f.pump(out, in) })
	wg.Go(func() { f.pump(in, out) })
	wg.Wait()
	f.untrack(in, out)
}

// pump copies src to dst, holding each chunk while the forwarder is cut.
// When either side ends, both connections are closed so the other pump
// ends too.
func (f *forwarder) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: done either way
		}
	}
}

// gate waits while the forwarder is cut.
func (f *forwarder) gate() {
	f.mu.Lock()
	open := f.open
	f.mu.Unlock()
	<-open
}

func (f *forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *forwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		delete(f.conns, c)
	}
}

// cut holds every byte from now on; idempotent.
func (f *forwarder) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.open:
		f.open = make(chan struct{})
	default:
	}
}

// restore lets the held bytes through; idempotent.
func (f *forwarder) restore() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.open:
	default:
		close(f.open)
	}
}

// Close stops listening, closes every relayed connection and waits for the
// goroutines.
func (f *forwarder) Close() error {
	err := f.ln.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	select {
	case <-f.open:
	default:
		close(f.open) // release pumps held by a cut
	}
	f.mu.Unlock()
	f.wg.Wait()
	return err
}
