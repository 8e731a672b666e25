package layer2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// rtmgrpLink is the netlink multicast group of link changes (RTMGRP_LINK
// in rtnetlink.h), which package syscall does not name.
const rtmgrpLink = 0x1

// CarrierWatch follows the carrier of the interfaces of the network
// namespace it was opened in, from the kernel's link notifications, so a
// cable plugged back in is seen at once rather than at the next rescan.
type CarrierWatch struct {
	f     *os.File
	known map[int]carrier // by interface index
	// lostAnswering holds the interfaces whose carrier went while they
	// answered for an address: their return is reported even if they
	// answer nothing by then (a rescan may have closed the responder of
	// an interface that went down).
	lostAnswering map[int]bool
}

// carrier is what the watch last saw of an interface's carrier.
type carrier struct {
	running bool
	ups     uint32
}

// returnedSince reports whether the carrier came back between was and
// now. The kernel reports carrier changes with a delay and may fold a
// quick down-and-up into one message that shows it running, so the
// count of carrier-up events decides; the flag stands in for kernels
// without that count.
func returnedSince(was carrier, now Link) bool {
	up := now.Flags&net.FlagRunning != 0
	return up && (now.CarrierUps > was.ups || !was.running)
}

// OpenCarrierWatch subscribes to link notifications in the calling
// thread's network namespace and notes which interfaces have a carrier
// now.
func OpenCarrierWatch() (*CarrierWatch, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, syscall.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("watch links: %w", os.NewSyscallError("socket", err))
	}
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: rtmgrpLink}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("watch links: %w", os.NewSyscallError("bind", err))
	}
	// Subscribed before the dump, so no change falls between the two.
	w := &CarrierWatch{f: os.NewFile(uintptr(fd), "netlink-link"), known: map[int]carrier{}, lostAnswering: map[int]bool{}}
	links, err := SystemLinks()
	if err != nil {
		_ = w.f.Close()
		return nil, err
	}
	for _, l := range links {
		w.known[l.Index] = carrierOf(l)
	}
	return w, nil
}

func carrierOf(l Link) carrier {
	return carrier{running: l.Flags&net.FlagRunning != 0, ups: l.CarrierUps}
}

// Run calls returned with the name of each usable interface whose carrier
// comes back, if answers says it answers for an address by its index, or
// said so when the carrier went, until ctx ends; then it closes the watch.
// lost, when set, is called with the index of an interface that answers
// when its carrier goes, and back, when set, with the index of every
// interface whose carrier comes back. An interface that appears is not a
// return, and
// one that answers nothing changes nothing: a node starting pods creates,
// raises and deletes veths all the time. The callbacks should return
// quickly.
func (w *CarrierWatch) Run(ctx context.Context, answers func(index int) bool, lost, back func(index int), returned func(name string)) error {
	stop := context.AfterFunc(ctx, func() { _ = w.f.Close() })
	defer stop()
	buf := make([]byte, 1<<16)
	for {
		n, err := w.f.Read(buf)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, syscall.ENOBUFS):
			// The kernel dropped notifications: missing one only delays
			// the fence until the membership says the same.
			continue
		case err != nil:
			return fmt.Errorf("watch links: %w", err)
		}
		links, gone, err := parseLinkEvents(buf[:n])
		if err != nil {
			continue // not a link message we can read; the next one may be
		}
		for _, index := range gone {
			delete(w.known, index)
			delete(w.lostAnswering, index)
		}
		for _, l := range links {
			name, isBack, report := w.note(l, answers, lost)
			if isBack && back != nil {
				back(l.Index)
			}
			if report {
				returned(name)
			}
		}
	}
}

// note records what a link message says: whether the carrier came back
// (back), and whether that is a return to report.
func (w *CarrierWatch) note(l Link, answers func(index int) bool, lost func(index int)) (name string, back, report bool) {
	was, seen := w.known[l.Index]
	w.known[l.Index] = carrierOf(l)
	if !seen {
		return "", false, false
	}
	running := l.Flags&net.FlagRunning != 0
	if was.running && !running {
		w.lostAnswering[l.Index] = answers(l.Index)
		if w.lostAnswering[l.Index] && lost != nil {
			lost(l.Index)
		}
		return "", false, false
	}
	if !returnedSince(was, l) {
		return "", false, false
	}
	answered := w.lostAnswering[l.Index]
	delete(w.lostAnswering, l.Index)
	return l.Name, true, l.Usable() && (answered || answers(l.Index))
}

// parseLinkEvents decodes link notifications: the links created or
// changed, and the indexes of those deleted.
func parseLinkEvents(b []byte) (links []Link, gone []int, err error) {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNetlink, err)
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Header.Type {
		case syscall.RTM_NEWLINK:
			l, err := parseLink(m)
			if err != nil {
				return nil, nil, err
			}
			links = append(links, l)
		case syscall.RTM_DELLINK:
			l, err := parseLink(m)
			if err != nil {
				return nil, nil, err
			}
			gone = append(gone, l.Index)
		}
	}
	return links, gone, nil
}
