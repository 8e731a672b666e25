package membership

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestOptionsDefaults(t *testing.T) {
	key16 := bytes.Repeat([]byte{7}, 16)
	tests := []struct {
		name    string
		in      Options
		want    Options
		wantErr bool
	}{
		{name: "defaults", in: Options{NodeName: "n1"},
			want: Options{NodeName: "n1", BindAddr: "0.0.0.0", BindPort: 7946, AdvertisePort: 7946}},
		{name: "advertise port follows bind port", in: Options{NodeName: "n1", BindAddr: "198.51.100.1", BindPort: 8000},
			want: Options{NodeName: "n1", BindAddr: "198.51.100.1", BindPort: 8000, AdvertisePort: 8000}},
		{name: "explicit advertise", in: Options{NodeName: "n1", BindAddr: "::", AdvertiseAddr: "2001:db8::1", AdvertisePort: 9000, SecretKey: key16},
			want: Options{NodeName: "n1", BindAddr: "::", BindPort: 7946, AdvertiseAddr: "2001:db8::1", AdvertisePort: 9000, SecretKey: key16}},
		{name: "no node name", in: Options{}, wantErr: true},
		{name: "bind address is a name", in: Options{NodeName: "n1", BindAddr: "localhost"}, wantErr: true},
		{name: "advertise address is garbage", in: Options{NodeName: "n1", AdvertiseAddr: "198.51.100"}, wantErr: true},
		{name: "port too large", in: Options{NodeName: "n1", BindPort: 70000}, wantErr: true},
		{name: "negative advertise port", in: Options{NodeName: "n1", AdvertisePort: -1}, wantErr: true},
		{name: "key of 20 bytes", in: Options{NodeName: "n1", SecretKey: make([]byte, 20)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidOptions) {
					t.Fatalf("error %v, want ErrInvalidOptions", err)
				}
				if _, err := New(discard, tt.in); !errors.Is(err, ErrInvalidOptions) {
					t.Fatalf("New: error %v, want ErrInvalidOptions", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestThreeMembersSeeEachOther(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a := newMember(t, "node-a", memberOpts{reg: reg})
	if diff := cmp.Diff([]string{"node-a"}, a.Live()); diff != "" {
		t.Fatalf("a alone (-want +got):\n%s", diff)
	}
	select {
	case <-a.Changed():
	default:
		t.Fatal("no Changed signal for the member's own join")
	}
	cluster := []*testMember{a, newMember(t, "node-b", memberOpts{}), newMember(t, "node-c", memberOpts{})}
	for _, m := range cluster[1:] {
		if n, err := m.Join([]string{a.addr}); err != nil || n != 1 {
			t.Fatalf("%s joins: reached %d, error %v; want 1, nil", m.name, n, err)
		}
	}
	for _, m := range cluster {
		waitLive(t, m, []string{"node-a", "node-b", "node-c"})
	}
	waitGauge(t, reg, "steadylb_memberlist_members", "state", "alive", 3)
	waitGauge(t, reg, "steadylb_memberlist_member_events_total", "event", "join", 3)
	// Probes go out every 100ms; the wait ends once one is counted.
	waitMetric(t, reg, "steadylb_memberlist_packets_sent_total", func(v float64) bool { return v > 0 })
}

func TestLeaveDropsTheMemberAtOnce(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	ms := cluster(t, memberOpts{reg: reg}, "node-a", "node-b", "node-c")
	if err := ms[2].Leave(5 * time.Second); err != nil {
		t.Fatalf("leave: %v", err)
	}
	for _, m := range ms[:2] {
		waitLive(t, m, []string{"node-a", "node-b"})
	}
	// The registry holds node-a's metrics only.
	waitGauge(t, reg, "steadylb_memberlist_members", "state", "gone", 1)
	waitGauge(t, reg, "steadylb_memberlist_members", "state", "alive", 2)
	if err := ms[2].Leave(time.Second); err != nil {
		t.Errorf("second Leave: %v, want no-op", err)
	}
	if err := ms[2].Shutdown(); err != nil {
		t.Errorf("Shutdown after Leave: %v, want no-op", err)
	}
	if _, err := ms[2].Join([]string{ms[0].addr}); !errors.Is(err, ErrClosed) {
		t.Errorf("Join after Leave: %v, want ErrClosed", err)
	}
}

func TestShutdownWithoutLeaveIsDetected(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	ms := cluster(t, memberOpts{reg: reg}, "node-a", "node-b", "node-c")
	if err := ms[1].Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	waitLive(t, ms[0], []string{"node-a", "node-c"})
	waitLive(t, ms[2], []string{"node-a", "node-c"})
	waitGauge(t, reg, "steadylb_memberlist_members", "state", "gone", 1)
	waitGauge(t, reg, "steadylb_memberlist_member_events_total", "event", "leave", 1)
}

// TestReturningMemberIsLiveAgain: a node that left comes back under the
// same name and address, as a restarted speaker does, and every member
// lists it again.
func TestReturningMemberIsLiveAgain(t *testing.T) {
	ms := cluster(t, memberOpts{}, "node-a", "node-b", "node-c")
	for _, stop := range []func(*testMember) error{
		func(m *testMember) error { return m.Leave(5 * time.Second) },
		func(m *testMember) error { return m.Shutdown() },
	} {
		old := ms[2]
		if err := stop(old); err != nil {
			t.Fatal(err)
		}
		waitLive(t, ms[0], []string{"node-a", "node-b"})
		back := newMember(t, "node-c", memberOpts{port: old.port})
		if _, err := back.Join([]string{ms[0].addr}); err != nil {
			t.Fatalf("rejoin: %v", err)
		}
		for _, m := range []*testMember{ms[0], ms[1], back} {
			waitLive(t, m, []string{"node-a", "node-b", "node-c"})
		}
		ms[2] = back
	}
}

func TestJoin(t *testing.T) {
	ms := cluster(t, memberOpts{}, "node-a", "node-b")
	closedPort := freePort(t) // nothing listens there
	closed := "127.0.0.1:" + itoa(closedPort)

	t.Run("known members are not contacted again, self not counted", func(t *testing.T) {
		n, err := ms[0].Join([]string{ms[0].addr, ms[1].addr, ms[1].addr, "", "[::ffff:127.0.0.1]:" + itoa(ms[1].port)})
		if err != nil || n != 1 {
			t.Errorf("reached %d, error %v; want 1, nil", n, err)
		}
	})
	t.Run("only self is nothing to do", func(t *testing.T) {
		n, err := ms[0].Join([]string{ms[0].addr, "127.0.0.1"})
		if err != nil || n != 0 {
			t.Errorf("reached %d, error %v; want 0, nil", n, err)
		}
	})
	t.Run("a bare host means the bind port", func(t *testing.T) {
		// Two members on one port of two loopback addresses.
		port := freePortOn(t, "127.0.0.2", "127.0.0.3")
		x := newMember(t, "node-x", memberOpts{bindAddr: "127.0.0.2", port: port})
		y := newMember(t, "node-y", memberOpts{bindAddr: "127.0.0.3", port: port})
		if n, err := y.Join([]string{"127.0.0.2"}); err != nil || n != 1 {
			t.Fatalf("reached %d, error %v; want 1, nil", n, err)
		}
		waitLive(t, x, []string{"node-x", "node-y"})
	})
	t.Run("some reached is success", func(t *testing.T) {
		n, err := ms[0].Join([]string{ms[1].addr, closed})
		if err != nil || n != 1 {
			t.Errorf("reached %d, error %v; want 1, nil", n, err)
		}
	})
	t.Run("none reached is an error", func(t *testing.T) {
		n, err := ms[0].Join([]string{closed})
		if err == nil || n != 0 {
			t.Errorf("reached %d, error %v; want 0 and an error", n, err)
		}
	})
	t.Run("empty list", func(t *testing.T) {
		n, err := ms[0].Join(nil)
		if err != nil || n != 0 {
			t.Errorf("reached %d, error %v; want 0, nil", n, err)
		}
	})
}

func TestEncryption(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	other := bytes.Repeat([]byte("o"), 32)
	ms := cluster(t, memberOpts{key: key}, "node-a", "node-b")

	for _, tt := range []struct {
		name string
		key  []byte
	}{
		{name: "different key", key: other},
		{name: "no key", key: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			intruder := newMember(t, "intruder", memberOpts{key: tt.key})
			if n, err := intruder.Join([]string{ms[0].addr, ms[1].addr}); err == nil {
				t.Fatalf("joined %d members of an encrypted cluster with %s", n, tt.name)
			}
			for _, m := range ms {
				if diff := cmp.Diff([]string{"node-a", "node-b"}, m.Live()); diff != "" {
					t.Errorf("%s after the failed join (-want +got):\n%s", m.name, diff)
				}
			}
			if diff := cmp.Diff([]string{"intruder"}, intruder.Live()); diff != "" {
				t.Errorf("intruder sees (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMetricsRegistration(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a := newMember(t, "node-a", memberOpts{reg: reg})
	if _, err := New(discard, Options{NodeName: "node-b", BindAddr: "127.0.0.1", BindPort: freePort(t), Registerer: reg}); err == nil {
		t.Fatal("a second Members on the same registry registered its metrics twice")
	}
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	// Shutdown unregistered node-a's collector, so the name is free again.
	b := newMember(t, "node-b", memberOpts{reg: reg})
	waitGauge(t, reg, "steadylb_memberlist_members", "state", "alive", 1)
	_ = b
}
