package main

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlags(t *testing.T) {
	defaults := flags{namespace: "metallb-system", nodeName: "n1", logLevel: "info", metricsAddr: ":7472", probeAddr: ":7474",
		mlLabels: "app=metallb,component=speaker", mlBindPort: 7946}
	with := func(change func(*flags)) flags {
		f := defaults
		change(&f)
		return f
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    flags
		wantErr bool
	}{
		{"flags", []string{"--node-name", "n1"}, nil, defaults, false},
		{"MetalLB's environment, as its DaemonSet sets it", nil, map[string]string{
			"METALLB_NODE_NAME": "n1", "METALLB_HOST": "198.51.100.7", "METALLB_NAMESPACE": "lb",
			"METALLB_ML_BIND_ADDR": "198.51.100.7", "METALLB_ML_BIND_PORT": "7947", "METALLB_ML_LABELS": "app=lb",
			"METALLB_ML_SECRET_KEY_PATH": "/etc/ml", "METALLB_POD_NAME": "speaker-x",
		}, with(func(f *flags) {
			f.host, f.namespace, f.mlBindAddr, f.mlBindPort, f.mlLabels = "198.51.100.7", "lb", "198.51.100.7", 7947, "app=lb"
			f.mlSecretKeyPath, f.podName = "/etc/ml", "speaker-x"
			f.metricsAddr, f.probeAddr = "198.51.100.7:7472", "198.51.100.7:7474"
		}), false},
		{"a flag wins over the environment", []string{"--node-name", "n1", "--ml-bindport", "0"},
			map[string]string{"METALLB_NODE_NAME": "other", "METALLB_ML_BIND_PORT": "7947"},
			with(func(f *flags) { f.mlBindPort = 0 }), false},
		{"IPv6 host", []string{"--node-name", "n1", "--host", "2001:db8::7", "--announce-interval", "30s"}, nil,
			with(func(f *flags) {
				f.host, f.metricsAddr, f.probeAddr, f.announceInterval = "2001:db8::7", "[2001:db8::7]:7472", "[2001:db8::7]:7474", 30*time.Second
			}), false},
		{"MetalLB's --ignore-exclude-lb", []string{"--node-name", "n1", "--ignore-exclude-lb"}, nil,
			with(func(f *flags) { f.ignoreExcludeLB = true }), false},
		{"no node name", nil, nil, flags{}, true},
		{"a port that is not a number", []string{"--node-name", "n1"}, map[string]string{"METALLB_ML_BIND_PORT": "x"}, flags{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("speaker", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			got, err := parseFlags(fs, tt.args, func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(flags{})); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
		})
	}
}
