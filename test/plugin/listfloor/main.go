// Command listfloor lists every Service of a cluster once and exits. No
// answer of kubectl-steadylb that covers every Service can take less than
// that LIST, so the plugin benchmark runs this as a fresh process, as it
// runs the plugin, and compares: its time is the floor. It takes the
// kubeconfig the way the plugin does, and -protobuf asks the API server
// for protobuf instead of JSON.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig to use")
	protobuf := flag.Bool("protobuf", false, "ask for protobuf rather than JSON")
	flag.Parse()
	n, err := list(*kubeconfig, *protobuf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listfloor:", err)
		os.Exit(1)
	}
	fmt.Println(n)
}

// list returns how many Services one LIST returned.
func list(kubeconfig string, protobuf bool) (int, error) {
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
	svcs, err := cs.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list services: %w", err)
	}
	return len(svcs.Items), nil
}
