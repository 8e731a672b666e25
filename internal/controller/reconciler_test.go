package controller

import (
	"testing"

	"github.com/steadylb/steadylb/internal/ipam"
)

func TestSupersededVersions(t *testing.T) {
	var s supersededVersions
	web, db := ipam.ServiceKey{Namespace: "a", Name: "web"}, ipam.ServiceKey{Namespace: "a", Name: "db"}
	s.record(web, "5")
	steps := []struct {
		key       ipam.ServiceKey
		rv        string
		wantStale bool
	}{
		{db, "5", false},  // another Service
		{web, "5", true},  // our status write's version, before our patch
		{web, "5", true},  // still, until another version is seen
		{web, "7", false}, // the patch arrived (or anything else did)
		{web, "5", false}, // forgotten
	}
	for i, st := range steps {
		if got := s.stale(st.key, st.rv); got != st.wantStale {
			t.Errorf("step %d: stale(%s, %s) = %v, want %v", i, st.key, st.rv, got, st.wantStale)
		}
	}
}
