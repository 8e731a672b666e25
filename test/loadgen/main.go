// Command loadgen sends HTTP requests at a steady rate (test/load) until
// SIGTERM or SIGINT, and writes one JSON line per request (load.Result) to
// --out. The lab starts it inside the client's network namespace, so every
// connection it opens leaves from there.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/steadylb/steadylb/test/load"
)

func main() {
	var opts load.Options
	out := flag.String("out", "", "file to append results to, one JSON line each (default stdout)")
	flag.StringVar(&opts.URL, "url", "", "URL to fetch")
	flag.IntVar(&opts.Rate, "rate", 300, "requests per second")
	flag.DurationVar(&opts.Timeout, "timeout", time.Second, "timeout of each request, connection included")
	flag.Parse()
	if err := run(opts, *out); err != nil {
		log.Fatal(err)
	}
}

func run(opts load.Options, path string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	f := os.Stdout
	if path != "" {
		var err error
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return fmt.Errorf("loadgen: %w", err)
		}
		defer f.Close()
	}
	// Flushed per result: the test reads them while the load runs.
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	var writeErr error
	err := load.Generate(ctx, opts, func(r load.Result) {
		if writeErr == nil {
			if writeErr = enc.Encode(r); writeErr == nil {
				writeErr = w.Flush()
			}
		}
	})
	if err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	if writeErr != nil {
		return fmt.Errorf("loadgen: write results: %w", writeErr)
	}
	return nil
}
