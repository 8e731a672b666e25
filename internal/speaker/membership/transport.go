package membership

import (
	"log"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

var _ memberlist.NodeAwareTransport = (*countingTransport)(nil)

// countingTransport is memberlist's own UDP/TCP transport, counting the
// packets it sends so the metrics can show the gossip traffic (probes,
// acks, gossip: everything but the TCP push/pull streams).
type countingTransport struct {
	*memberlist.NetTransport
	packets atomic.Uint64
	bytes   atomic.Uint64
}

func newCountingTransport(bindAddr string, bindPort int, logger *log.Logger) (*countingTransport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{bindAddr},
		BindPort:  bindPort,
		Logger:    logger,
	})
	if err != nil {
		return nil, err
	}
	return &countingTransport{NetTransport: nt}, nil
}

func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	t.count(len(b))
	return t.NetTransport.WriteTo(b, addr)
}

func (t *countingTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	t.count(len(b))
	return t.NetTransport.WriteToAddress(b, a)
}

func (t *countingTransport) count(n int) {
	t.packets.Add(1)
	t.bytes.Add(uint64(n))
}
