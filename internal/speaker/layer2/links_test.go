package layer2

import (
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUsable(t *testing.T) {
	tests := []struct {
		link Link
		want bool
	}{
		{eth0, true},
		{lo, false},
		{port0, false},
		{down0, false},
		{tun0, false},
		{Link{Name: "ib0", Flags: usableFlags, HardwareAddr: make(net.HardwareAddr, 20)}, false},
	}
	for _, tt := range tests {
		if got := tt.link.Usable(); got != tt.want {
			t.Errorf("%s: Usable() = %v, want %v", tt.link.Name, got, tt.want)
		}
	}
}

// TestSystemLinks compares the netlink dump with what the standard library
// reads from the same namespace.
func TestSystemLinks(t *testing.T) {
	links, err := SystemLinks()
	if err != nil {
		t.Fatal(err)
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Name  string
		Index int
		MAC   string
		Flags net.Flags
	}
	const flags = net.FlagUp | net.FlagBroadcast | net.FlagLoopback | net.FlagPointToPoint | net.FlagMulticast | net.FlagRunning
	var got, want []view
	for _, l := range links {
		got = append(got, view{l.Name, l.Index, l.HardwareAddr.String(), l.Flags})
	}
	for _, i := range ifaces {
		want = append(want, view{i.Name, i.Index, i.HardwareAddr.String(), i.Flags & flags})
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("links (-net.Interfaces +SystemLinks):\n%s", d)
	}
}
