// Command listfloor lists every Service of a cluster once and exits. No
// answer of kubectl-steadylb that covers every Service can take less than
// that LIST, so the plugin benchmark runs this as a fresh process, as it
// runs the plugin, and compares: its time is the floor. It takes the
// kubeconfig the way the plugin does, and -protobuf asks the API server
// for protobuf instead of JSON. client-go reads the whole body before it
// decodes it, which a reader that decodes as the bytes arrive beats;
// -discard reads the protobuf body and decodes nothing, the least any
// reader of the LIST does, and prints its length. -decode makes the LIST
// in protobuf and decodes every Service with the plugin's own streamed
// decoder (internal/inspect/servicelist), and nothing else: the least a
// command does that answers from every Service, its honest floor.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/steadylb/steadylb/internal/inspect/servicelist"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig to use")
	protobuf := flag.Bool("protobuf", false, "ask for protobuf rather than JSON")
	discard := flag.Bool("discard", false, "read the protobuf body without decoding it; print its length")
	decode := flag.Bool("decode", false, "decode the protobuf body as the plugin does, Service by Service as it arrives")
	flag.Parse()
	mode := clientGo
	switch {
	case *discard && *decode:
		fmt.Fprintln(os.Stderr, "listfloor: -discard and -decode exclude each other")
		os.Exit(2)
	case *discard:
		mode = bytesOnly
	case *decode:
		// The plugin's collector settings too: the floor is the least a
		// process does, and this is the least collecting.
		servicelist.ShortLivedGC()
		mode = streamed
	}
	n, err := list(*kubeconfig, *protobuf || mode != clientGo, mode)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listfloor:", err)
		os.Exit(1)
	}
	fmt.Println(n)
}

// mode is how the LIST's body is read.
type mode int

const (
	clientGo  mode = iota // client-go's typed LIST: the whole body, then decoded
	bytesOnly             // read, not decoded
	streamed              // decoded as it arrives, as the plugin does
)

// list returns how many Services one LIST returned, or in bytesOnly mode
// the length of its body.
func list(kubeconfig string, protobuf bool, m mode) (int64, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return 0, fmt.Errorf("read kubeconfig: %w", err)
	}
	if protobuf {
		cfg.ContentType = runtime.ContentTypeProtobuf
	} else {
		cfg.ContentType = runtime.ContentTypeJSON
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	ctx := context.Background()
	switch m {
	case streamed:
		svcs, err := servicelist.List(ctx, cs.CoreV1().RESTClient(), nil)
		if err != nil {
			return 0, fmt.Errorf("list services: %w", err)
		}
		return int64(len(svcs)), nil
	case bytesOnly:
		body, err := cs.CoreV1().RESTClient().Get().Resource("services").Stream(ctx)
		if err != nil {
			return 0, fmt.Errorf("list services: %w", err)
		}
		defer body.Close()
		n, err := io.Copy(io.Discard, body)
		if err != nil {
			return 0, fmt.Errorf("read the Service list: %w", err)
		}
		return n, nil
	default:
		svcs, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, fmt.Errorf("list services: %w", err)
		}
		return int64(len(svcs.Items)), nil
	}
}
