package facts

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func TestCanServe(t *testing.T) {
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name string
		c    discoveryv1.EndpointConditions
		want bool
	}{
		{"no conditions means ready", discoveryv1.EndpointConditions{}, true},
		{"ready", discoveryv1.EndpointConditions{Ready: yes}, true},
		{"not ready", discoveryv1.EndpointConditions{Ready: no}, false},
		{"not ready but serving", discoveryv1.EndpointConditions{Ready: no, Serving: yes}, true},
		{"serving and terminating", discoveryv1.EndpointConditions{Ready: no, Serving: yes, Terminating: yes}, false},
		{"terminating without other conditions", discoveryv1.EndpointConditions{Terminating: yes}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := canServe(tt.c); got != tt.want {
				t.Errorf("canServe(%+v) = %v, want %v", tt.c, got, tt.want)
			}
		})
	}
}

func TestEndpointsOf(t *testing.T) {
	ep := func(node string, ready bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{"203.0.113.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
		if node != "" {
			e.NodeName = ptr.To(node)
		}
		return e
	}
	slice := func(kind discoveryv1.AddressType, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{AddressType: kind, Endpoints: eps}
	}
	tests := []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   Endpoints
	}{
		{"no slices", nil, Endpoints{Nodes: map[string]bool{}}},
		{"ready endpoints over two slices", []discoveryv1.EndpointSlice{
			slice(discoveryv1.AddressTypeIPv4, ep("a", true), ep("b", false)),
			slice(discoveryv1.AddressTypeIPv6, ep("c", true)),
		}, Endpoints{Serving: true, Nodes: map[string]bool{"a": true, "c": true}}},
		{"an endpoint without a node serves but places nothing", []discoveryv1.EndpointSlice{
			slice(discoveryv1.AddressTypeIPv4, ep("", true)),
		}, Endpoints{Serving: true, Nodes: map[string]bool{}, Unplaced: 1}},
		{"FQDN slices do not count", []discoveryv1.EndpointSlice{
			slice(discoveryv1.AddressTypeFQDN, ep("a", true)),
		}, Endpoints{Nodes: map[string]bool{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, EndpointsOf(tt.slices), cmp.AllowUnexported(Endpoints{})); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
		})
	}
}
