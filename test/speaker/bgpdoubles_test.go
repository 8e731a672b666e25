package speaker

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/steadylb/steadylb/internal/speaker/bgp"
)

// fakeRouter is one node's BGP Router: it keeps the sessions and, per
// session, the routes as a router would hold them, and counts the calls.
// The BGP library and its packets are tested in internal/speaker/bgp and
// against FRR; here the subject is what the speaker's core asks for.
type fakeRouter struct {
	mu       sync.Mutex
	sessions map[string]bgp.Session
	routes   map[string]map[netip.Prefix]bgp.Route
	// resets counts, per session, how often SetSessions created or
	// changed it.
	resets map[string]int
	// updates counts Update calls, and prefixes the routes they carried.
	updates, prefixes int
	// failing sessions refuse Update.
	failing map[string]bool
	// updated is signalled, without blocking, after every Update.
	updated chan struct{}
	// down sessions are not established; changed is signalled, without
	// blocking, when the sessions or their states change.
	down    map[string]bool
	changed chan struct{}
	// faults are what Faults returns.
	faults []bgp.Fault
}

var _ bgp.Router = (*fakeRouter)(nil)

func newFakeRouter() *fakeRouter {
	return &fakeRouter{sessions: map[string]bgp.Session{}, routes: map[string]map[netip.Prefix]bgp.Route{},
		resets: map[string]int{}, failing: map[string]bool{}, updated: make(chan struct{}, 1),
		down: map[string]bool{}, changed: make(chan struct{}, 1)}
}

func (f *fakeRouter) SetSessions(_ context.Context, sessions []bgp.Session) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	// As the real Router does, one session it cannot run fails the call
	// and changes nothing; TCP MD5 keys longer than 80 bytes are one case.
	for _, s := range sessions {
		if len(s.Password) > 80 {
			return &bgp.SessionError{Session: s.Name, Reason: "password: longer than the 80 bytes TCP MD5 allows"}
		}
	}
	next := map[string]bgp.Session{}
	for _, s := range sessions {
		next[s.Name] = s
		if old, ok := f.sessions[s.Name]; !ok || !old.Equal(s) {
			f.resets[s.Name]++
		}
	}
	for name := range f.sessions {
		if _, kept := next[name]; !kept {
			delete(f.routes, name) // a session that stops withdraws its routes
		}
	}
	f.sessions = next
	f.signal()
	return nil
}

func (f *fakeRouter) signal() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// setDown takes a session down (not established) or brings it back.
func (f *fakeRouter) setDown(session string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[session] = down
	f.signal()
}

var errRefused = errors.New("refused by the test")

func (f *fakeRouter) Update(_ context.Context, session string, advertise []bgp.Route, withdraw []netip.Prefix) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sessions[session]; !ok {
		return errors.New("no such session " + session)
	}
	if f.failing[session] {
		return errRefused
	}
	f.updates++
	f.prefixes += len(advertise) + len(withdraw)
	m := f.routes[session]
	if m == nil {
		m = map[netip.Prefix]bgp.Route{}
		f.routes[session] = m
	}
	for _, r := range advertise {
		m[r.Prefix] = r
	}
	for _, p := range withdraw {
		delete(m, p)
	}
	select {
	case f.updated <- struct{}{}:
	default:
	}
	return nil
}

func (f *fakeRouter) Established() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for name := range f.sessions {
		if !f.down[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (f *fakeRouter) Faults() []bgp.Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.faults)
}

// setFaults makes the Router report faults, as it does while a step of a
// session fails and is retried.
func (f *fakeRouter) setFaults(faults ...bgp.Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = faults
	f.signal()
}

func (f *fakeRouter) Changed() <-chan struct{} { return f.changed }

// prefixes are the prefixes a session holds, sorted, as strings.
func (f *fakeRouter) held(session string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.routes[session] {
		out = append(out, p.String())
	}
	slices.Sort(out)
	return out
}

func (f *fakeRouter) route(session, prefix string) (bgp.Route, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.routes[session][netip.MustParsePrefix(prefix)]
	return r, ok
}

func (f *fakeRouter) sessionNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.sessions))
}

// session is a session's settings as last given.
func (f *fakeRouter) session(name string) bgp.Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[name]
}

func (f *fakeRouter) resetCount(session string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resets[session]
}

func (f *fakeRouter) setFailing(session string, failing bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing[session] = failing
}

func (f *fakeRouter) counts() (updates, prefixes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.updates, f.prefixes
}

// routeCount is the number of routes a session holds.
func (f *fakeRouter) routeCount(session string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.routes[session])
}
