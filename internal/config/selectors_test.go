package config

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

func TestMayOverlap(t *testing.T) {
	parse := func(ss ...string) []labels.Selector {
		var out []labels.Selector
		for _, s := range ss {
			sel, err := labels.Parse(s)
			if err != nil {
				t.Fatalf("parse %q: %v", s, err)
			}
			out = append(out, sel)
		}
		return out
	}
	cases := []struct {
		a, b []string
		want bool
	}{
		{nil, []string{"rack=1"}, true},
		{[]string{"rack=1"}, []string{"rack=1"}, true},
		{[]string{"rack=1"}, []string{"rack=2"}, false},
		{[]string{"rack=1"}, []string{"zone=a"}, true},
		{[]string{"rack in (1,2)"}, []string{"rack in (2,3)"}, true},
		{[]string{"rack in (1,2)"}, []string{"rack in (3,4)"}, false},
		{[]string{"rack"}, []string{"!rack"}, false},
		{[]string{"rack=1"}, []string{"!rack"}, false},
		{[]string{"rack!=1"}, []string{"!rack"}, true},
		{[]string{"rack in (1,2)"}, []string{"rack notin (1,2,3)"}, false},
		{[]string{"rack in (1,4)"}, []string{"rack notin (1,2,3)"}, true},
		{[]string{"rack=1"}, []string{"rack=2", "zone=a"}, true},
		{[]string{"rack=1", "rack=3"}, []string{"rack=2", "rack=4"}, false},
		{[]string{""}, []string{"rack=2"}, true}, // an empty selector selects everything
	}
	for _, tc := range cases {
		a, b := parse(tc.a...), parse(tc.b...)
		if got := mayOverlap(a, b); got != tc.want {
			t.Errorf("mayOverlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := mayOverlap(b, a); got != tc.want {
			t.Errorf("mayOverlap(%q, %q) = %v, want %v (reversed)", tc.b, tc.a, got, tc.want)
		}
	}
}
