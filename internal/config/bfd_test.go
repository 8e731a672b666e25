package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/steadylb/steadylb/api/v1beta1"
)

func TestBFDProfileRules(t *testing.T) {
	u := func(n uint32) *uint32 { return &n }
	runRules(t, []ruleCase{
		{name: "defaults only", snap: snap(bfd("b"))},
		{
			name: "every field at its bounds",
			snap: snap(bfd("b", bfdSpec(func(s *v1beta1.BFDProfileSpec) {
				s.ReceiveInterval, s.TransmitInterval, s.EchoInterval = u(10), u(60000), u(10)
				s.DetectMultiplier, s.MinimumTTL = u(255), u(1)
			}))),
		},
		{
			name: "every field out of range",
			snap: snap(bfd("b", bfdSpec(func(s *v1beta1.BFDProfileSpec) {
				s.ReceiveInterval, s.TransmitInterval, s.EchoInterval = u(9), u(60001), u(0)
				s.DetectMultiplier, s.MinimumTTL = u(256), u(255)
			}))),
			want: []string{
				`BFDProfile "b": spec.receiveInterval: 9 is out of range 10-60000`,
				`BFDProfile "b": spec.transmitInterval: 60001 is out of range 10-60000`,
				`BFDProfile "b": spec.detectMultiplier: 256 is out of range 2-255`,
				`BFDProfile "b": spec.echoInterval: 0 is out of range 10-60000`,
				`BFDProfile "b": spec.minimumTtl: 255 is out of range 1-254`,
			},
		},
	})
}

func TestBFDProfileModel(t *testing.T) {
	type view struct {
		Receive, Transmit, Echo time.Duration
		Multiplier, MinTTL      uint32
		EchoMode, Passive       bool
	}
	see := func(b *BFDProfile) view {
		return view{b.ReceiveInterval(), b.TransmitInterval(), b.EchoInterval(), b.DetectMultiplier(), b.MinimumTTL(), b.EchoMode(), b.PassiveMode()}
	}
	cfg := mustBuild(t, snap(
		bfd("default"),
		bfd("tuned", echo(), bfdSpec(func(s *v1beta1.BFDProfileSpec) {
			s.ReceiveInterval, s.TransmitInterval, s.EchoInterval = ptr(uint32(100)), ptr(uint32(200)), ptr(uint32(30))
			s.DetectMultiplier, s.MinimumTTL, s.PassiveMode = ptr(uint32(5)), ptr(uint32(250)), ptr(true)
		})),
	))
	got := map[string]view{}
	for _, b := range cfg.BFDProfiles() {
		got[b.Name()] = see(b)
	}
	want := map[string]view{
		"default": {Receive: 300 * time.Millisecond, Transmit: 300 * time.Millisecond, Echo: 50 * time.Millisecond, Multiplier: 3, MinTTL: 254},
		"tuned": {Receive: 100 * time.Millisecond, Transmit: 200 * time.Millisecond, Echo: 30 * time.Millisecond, Multiplier: 5, MinTTL: 250,
			EchoMode: true, Passive: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, ok := cfg.BFDProfile("tuned"); !ok {
		t.Error(`BFDProfile("tuned") not found`)
	}
}
