package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// session lets the demo drive test/cluster, whose helpers take a
// testing.TB, outside a test: Fatal ends the demo with the message,
// Cleanup runs at the end, logs go to the terminal. The embedded
// interface is nil: a helper calling a method not defined here panics,
// which the demo reports like a Fatal.
type session struct {
	testing.TB

	ctx    context.Context
	cancel context.CancelFunc
	dir    string

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// errFatal carries a Fatal's message to the demo's top level.
type errFatal struct{ msg string }

func (e errFatal) Error() string { return e.msg }

func newSession() (*session, error) {
	dir, err := os.MkdirTemp("", "steadylb-demo-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &session{ctx: ctx, cancel: cancel, dir: dir}, nil
}

func (s *session) Helper()                  {}
func (s *session) Name() string             { return "demo" }
func (s *session) Context() context.Context { return s.ctx }
func (s *session) TempDir() string {
	d, err := os.MkdirTemp(s.dir, "tmp-")
	if err != nil {
		s.Fatal(err)
	}
	return d
}
func (s *session) Log(args ...any)                 { fmt.Println(args...) }
func (s *session) Logf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (s *session) Error(args ...any)               { s.fail(); fmt.Fprintln(os.Stderr, args...) }
func (s *session) Errorf(format string, args ...any) {
	s.fail()
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
func (s *session) Fatal(args ...any) { s.fail(); panic(errFatal{fmt.Sprint(args...)}) }
func (s *session) Fatalf(format string, args ...any) {
	s.fail()
	panic(errFatal{fmt.Sprintf(format, args...)})
}
func (s *session) Skip(args ...any) { panic(errFatal{fmt.Sprint(args...)}) }
func (s *session) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
func (s *session) fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}
func (s *session) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// close runs the cleanups, last first, as a test's end would.
func (s *session) close() error {
	s.cancel()
	s.mu.Lock()
	cleanups := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	return os.RemoveAll(s.dir)
}

// recoverFatal turns a Fatal (or a panic in a helper) into the error run
// returns.
func recoverFatal(err *error) {
	r := recover()
	if r == nil {
		return
	}
	var f errFatal
	if e, ok := r.(error); ok && errors.As(e, &f) {
		*err = f
		return
	}
	*err = fmt.Errorf("%v", r)
}
