package membership

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/steadylb/steadylb/test/proc"
)

// waitTimeout bounds every wait for the cluster to converge. It is not an
// expectation of speed: convergence normally takes well under a second,
// and a slow shared machine gets plenty of slack.
const waitTimeout = 20 * time.Second

// freePort finds a loopback port that is free for both TCP and UDP right
// now, below the kernel's ephemeral range (proc.FreePort): a port of that
// range can go to any outgoing connection before the member binds it.
// Another test may still take it before we bind, so newMember retries.
func freePort(t testing.TB) int {
	t.Helper()
	return freePortOn(t, "127.0.0.1")
}

// freePortOn finds a port free for TCP and UDP on every one of the given
// loopback addresses.
func freePortOn(t testing.TB, addrs ...string) int {
	t.Helper()
	return proc.FreePort(t, func(port int) bool { return portFree(addrs, port) })
}

// portFree says whether TCP and UDP on every address can bind port.
func portFree(addrs []string, port int) bool {
	var closers []interface{ Close() error }
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for _, a := range addrs {
		hp := net.JoinHostPort(a, fmt.Sprint(port))
		udp, err := net.ListenPacket("udp", hp)
		if err != nil {
			return false
		}
		closers = append(closers, udp)
		tcp, err := net.Listen("tcp", hp)
		if err != nil {
			return false
		}
		closers = append(closers, tcp)
	}
	return true
}

type memberOpts struct {
	bindAddr string // default 127.0.0.1
	key      []byte
	reg      prometheus.Registerer
	port     int // 0: pick a free one
	log      logr.Logger
	onDead   func()
	// onSuspected is given to every member.
	onSuspected func()
}

// testMember is a Members on 127.0.0.1 with its address, shut down when
// the test ends.
type testMember struct {
	*Members
	name string
	addr string
	port int
}

func newMember(t testing.TB, name string, o memberOpts) *testMember {
	t.Helper()
	log := o.log
	if log.GetSink() == nil {
		log = logr.Discard()
		if tt, ok := t.(*testing.T); ok && testing.Verbose() {
			log = testr.New(tt)
		}
	}
	bindAddr := o.bindAddr
	if bindAddr == "" {
		bindAddr = "127.0.0.1"
	}
	for attempt := 0; ; attempt++ {
		port := o.port
		if port == 0 {
			port = freePort(t)
		}
		m, err := New(log.WithValues("self", name), Options{
			NodeName: name, BindAddr: bindAddr, BindPort: port,
			SecretKey: o.key, Registerer: o.reg, OnDeclaredDead: o.onDead, OnSuspected: o.onSuspected,
		})
		if err != nil && strings.Contains(err.Error(), "address already in use") && attempt < 5 && o.port == 0 {
			continue
		}
		if err != nil {
			t.Fatalf("New(%s): %v", name, err)
		}
		t.Cleanup(func() { _ = m.Shutdown() })
		return &testMember{Members: m, name: name, addr: net.JoinHostPort(bindAddr, fmt.Sprint(port)), port: port}
	}
}

// cluster starts members with the given names, all joined through the
// first one, and waits until every one sees all of them. Only the first
// registers metrics on o.reg.
func cluster(t testing.TB, o memberOpts, names ...string) []*testMember {
	t.Helper()
	ms := make([]*testMember, len(names))
	for i, name := range names {
		ms[i] = newMember(t, name, o)
		o.reg = nil
		if i > 0 {
			if _, err := ms[i].Join([]string{ms[0].addr}); err != nil {
				t.Fatalf("%s joins %s: %v", name, ms[0].name, err)
			}
		}
	}
	want := slices.Sorted(slices.Values(names))
	for _, m := range ms {
		waitLive(t, m, want)
	}
	return ms
}

// waitLive waits until m's Live() is want, re-reading it on each Changed
// signal (and every 100ms, to report progress on failure).
func waitLive(t testing.TB, m *testMember, want []string) {
	t.Helper()
	if err := awaitLive(m.Members, want, waitTimeout); err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
}

func awaitLive(m *Members, want []string, timeout time.Duration) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		got := m.Live()
		if slices.Equal(got, want) {
			return nil
		}
		select {
		case <-m.Changed():
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("live members are %v after %v, want %v", got, timeout, want)
		}
	}
}

// gauge reads one sample of a gathered metric family, by its label value
// (or the only sample when label is "").
func gauge(t testing.TB, g prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" || hasLabel(m, label, value) {
				if m.GetGauge() != nil {
					return m.GetGauge().GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no sample %s{%s=%q}", name, label, value)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// waitGauge waits until a metric sample has the wanted value.
func waitGauge(t testing.TB, g prometheus.Gatherer, name, label, value string, want float64) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		got := gauge(t, g, name, label, value)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s=%q} is %v after %v, want %v", name, label, value, got, waitTimeout, want)
		}
		time.Sleep(20 * time.Millisecond) // polling a scrape; no event to wait on
	}
}

// waitMetric waits until the only sample of a metric satisfies ok.
func waitMetric(t testing.TB, g prometheus.Gatherer, name string, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		got := gauge(t, g, name, "", "")
		if ok(got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %v after %v", name, got, waitTimeout)
		}
		time.Sleep(20 * time.Millisecond) // polling a scrape; no event to wait on
	}
}

// waitFor polls ok until it holds, for state that signals nothing.
func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitTimeout, what)
		}
		time.Sleep(20 * time.Millisecond) // polling state that has no signal
	}
}

var discard = logr.Discard()

func itoa(n int) string { return fmt.Sprint(n) }
