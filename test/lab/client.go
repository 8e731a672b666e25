package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/steadylb/steadylb/test/l2probe"
	"github.com/steadylb/steadylb/test/netns"
	"github.com/steadylb/steadylb/test/scrape"
)

// Client is the lab's client: a host on both segments that asks who holds
// an address and listens for announcements, and reaches the speakers'
// HTTP endpoints over segment a.
type Client struct {
	NS   *netns.NS
	macs map[string]net.HardwareAddr
}

// MAC is the MAC of the client's interface ifname.
func (c *Client) MAC(ifname string) net.HardwareAddr { return c.macs[ifname] }

// Prober opens an l2probe.Prober on the client's interface ifname, closed
// when tb ends.
func (c *Client) Prober(tb testing.TB, ifname string) *l2probe.Prober {
	tb.Helper()
	var p *l2probe.Prober
	if err := c.NS.Run(func() (err error) { p, err = l2probe.NewProber(ifname); return err }); err != nil {
		tb.Fatalf("lab: open a prober on the client's %s: %v", ifname, err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// Listen starts recording announcements on the client's interface ifname
// until tb ends.
func (c *Client) Listen(tb testing.TB, ifname string) *l2probe.Listener {
	tb.Helper()
	var ls *l2probe.Listener
	if err := c.NS.Run(func() (err error) { ls, err = l2probe.Listen(context.Background(), ifname); return err }); err != nil {
		tb.Fatalf("lab: listen on the client's %s: %v", ifname, err)
	}
	tb.Cleanup(func() {
		if err := ls.Close(); err != nil {
			tb.Errorf("lab: listener on %s: %v", ifname, err)
		}
	})
	return ls
}

// HTTP is an HTTP client whose connections leave from the client's
// namespace.
func (c *Client) HTTP() *http.Client { return httpIn(c.NS) }

// Get fetches url from the client's namespace and returns the body of a
// 200 answer.
func (c *Client) Get(ctx context.Context, url string) ([]byte, error) {
	return get(ctx, c.NS, url)
}

// Scrape reads a metrics endpoint from the client's namespace.
func (c *Client) Scrape(ctx context.Context, url string) (scrape.Samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return scrape.Parse(resp.Body)
}

// httpIn is an HTTP client whose connections are opened inside ns: each
// socket is made on a thread that entered ns, and keeps the namespace.
func httpIn(ns *netns.NS) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := ns.Run(func() (err error) {
			var d net.Dialer
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true},
	}
}

func get(ctx context.Context, ns *netns.NS, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpIn(ns).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}
