// Command backend is the lab's application Pod: a tiny HTTP server that
// answers every request with the Pod and node it runs on and the source
// address the request arrived from, so a test sending requests through a
// LoadBalancer address sees which node carried each one, which Pod served
// it, and whether the client's address survived the way (it does only
// under externalTrafficPolicy: Local).
//
// It reads POD_NAME and NODE_NAME from its environment, as a Deployment
// passes them with the downward API. On SIGTERM it goes on serving for
// --drain (what a preStop sleep gives a Pod: the time for load balancers
// and kube-proxy to stop sending it new requests once its endpoint is
// terminating), then stops accepting connections and finishes the
// requests in flight, as a well-behaved Pod does.
//
// The answer is one JSON object: {"pod": "...", "node": "...", "client":
// "address:port"}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Answer is what the backend says about a request; test/load decodes it.
type Answer struct {
	Pod    string `json:"pod"`
	Node   string `json:"node"`
	Client string `json:"client"`
}

func main() {
	listen := flag.String("listen", ":8080", "address to serve on")
	drain := flag.Duration("drain", 0, "how long to go on serving after SIGTERM")
	flag.Parse()
	if err := run(*listen, *drain, os.Getenv("POD_NAME"), os.Getenv("NODE_NAME")); err != nil {
		log.Fatal(err)
	}
}

func run(listen string, drain time.Duration, pod, node string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	srv := &http.Server{Handler: handler(pod, node), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Printf("backend: pod %q on node %q serving on %s", pod, node, ln.Addr())
	select {
	case err := <-done:
		return fmt.Errorf("backend: %w", err)
	case <-ctx.Done():
	}
	log.Printf("backend: terminating: serving %v more", drain)
	time.Sleep(drain) // the drain itself: requests keep being served meanwhile
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("backend: shut down: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("backend: %w", err)
	}
	return nil
}

func handler(pod, node string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Answer{Pod: pod, Node: node, Client: r.RemoteAddr})
	})
}
