// Package l2probe asks a layer-2 segment who holds an address and listens
// for the announcements of a takeover, with real ARP and NDP frames, for
// the speaker's network-namespace tests and failover benchmarks.
//
// Open both inside the namespace of the interface (see test/netns: Run).
//
//	p, err := l2probe.NewProber("eth0")
//	answers, err := p.Ask(ctx, addr, 200*time.Millisecond) // every MAC that answered
//	if len(answers) != 1 { ... two nodes answer ... }
//
//	// Many addresses at once: one request each, answers collected together.
//	byAddr, err := p.Sweep(ctx, addrs, 50*time.Millisecond)
//
//	// Failover: kill the owner at t0, then
//	a, err := p.AwaitNewMAC(ctx, addr, oldMAC, 20*time.Millisecond)
//	latency := a.At.Sub(t0)
//
//	l, err := l2probe.Listen(ctx, "eth0") // records gratuitous ARP / unsolicited NA
//	ann, err := l.Wait(ctx, l2probe.For(addr))
//
// A Prober asks from the interface's MAC and its first IPv4 address (or
// 0.0.0.0, an RFC 5227 probe) and its link-local IPv6 address (or ::, a
// duplicate address detection probe, answered by multicast). Its sockets do
// not see the frames the host itself sends.
package l2probe
