// Package crds checks steadylb's generated CRDs against a real API server:
// MetalLB-style YAML applies unchanged, every kind round-trips, both BGPPeer
// versions are served from one object, and the CEL rules reject bad objects
// with readable messages.
package crds

import (
	"testing"

	"github.com/steadylb/steadylb/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
