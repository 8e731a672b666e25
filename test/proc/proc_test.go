package proc

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestFreeAddrOutsideEphemeralRange: the port can be bound, and lies
// below the range the kernel hands outgoing connections.
func TestFreeAddrOutsideEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		addr := FreeAddr(t)
		_, portText, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(portText)
		if port < freePortMin || port >= low {
			t.Fatalf("FreeAddr gave port %d, want %d to %d", port, freePortMin, low-1)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("FreeAddr gave %s, which cannot be bound: %v", addr, err)
		}
		l.Close()
	}
}

// TestAliveEndsWithTheProcess: the context ends when the process exits,
// long before its parent's deadline.
func TestAliveEndsWithTheProcess(t *testing.T) {
	p := Start(t, "/bin/true")
	parent, cancelParent := context.WithTimeout(context.Background(), time.Minute)
	defer cancelParent()
	ctx, cancel := p.Alive(parent)
	defer cancel()
	<-ctx.Done()
	if parent.Err() != nil {
		t.Fatal("the parent ended first")
	}
}
