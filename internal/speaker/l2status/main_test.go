package l2status

import (
	"testing"

	"github.com/steadylb/steadylb/test/testenv"
)

// TestMain starts a control plane: the Writer is tested against a real API
// server.
func TestMain(m *testing.M) { testenv.Main(m) }
