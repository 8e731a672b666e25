package cluster_test

import (
	"os"
	"testing"

	"github.com/steadylb/steadylb/test/cluster"
)

func TestMain(m *testing.M) { os.Exit(cluster.Run(m)) }
