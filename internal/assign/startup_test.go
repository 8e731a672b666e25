package assign

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/steadylb/steadylb/internal/config"
	"github.com/steadylb/steadylb/internal/ipam"
)

// claimsFixture is the configuration and the owned Services, oldest
// first, of syntheticCluster(n): most show an address, some are pending
// (no claim).
func claimsFixture(t *testing.T, n int) (*config.Config, []*corev1.Service) {
	t.Helper()
	c := syntheticCluster(n)
	cfg, err := config.Build(config.Snapshot{Pools: c.Pools})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, OwnedOldestFirst(c.Services, c.LBClass)
}

func anyLabels(string) (labels.Set, error) { return labels.Set{}, nil }

// TestClaimsInOrder: the claims made ahead of the book come one for each
// Service that shows addresses, in the owned order, across many batches.
func TestClaimsInOrder(t *testing.T) {
	cfg, owned := claimsFixture(t, 5*claimBatch+7)
	var want []ipam.ServiceKey
	for _, svc := range owned {
		if len(StatusAddresses(svc)) > 0 {
			want = append(want, Key(svc))
		}
	}
	m := makeClaims(cfg, owned, anyLabels)
	var got []ipam.ServiceKey
	m.each(func(c *ipam.Claim) bool {
		got = append(got, c.Request.Service)
		return true
	})
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if len(want) <= 2*claimBatch {
		t.Fatalf("%d claims: too few to cross batches", len(want))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("claims in another order or number: %d made, %d wanted", len(got), len(want))
	}
}

// TestClaimsStopEarly: a book that stops taking claims mid-batch and
// mid-list leaves no reader behind; stop returns.
func TestClaimsStopEarly(t *testing.T) {
	cfg, owned := claimsFixture(t, 5*claimBatch)
	for _, after := range []int{0, 1, claimBatch - 1, claimBatch, 2*claimBatch + 3} {
		m := makeClaims(cfg, owned, anyLabels)
		n := 0
		m.each(func(*ipam.Claim) bool {
			n++
			return n <= after
		})
		if err := m.stop(); err != nil {
			t.Fatal(err)
		}
		if n != after+1 {
			t.Errorf("stopping after %d: %d claims yielded", after, n)
		}
	}
}

// TestRestoreReportsLabelErrors: a namespace whose labels cannot be read
// fails the restore with that error.
func TestRestoreReportsLabelErrors(t *testing.T) {
	cfg, owned := claimsFixture(t, 3*claimBatch)
	broken := errors.New("namespace lookup failed")
	calls := 0
	_, err := restoreBook(cfg, owned, func(string) (labels.Set, error) {
		if calls++; calls > claimBatch+5 {
			return nil, broken
		}
		return labels.Set{}, nil
	})
	if !errors.Is(err, broken) {
		t.Errorf("restore: %v, want the lookup's error", err)
	}
}

// TestSortOldestFirst: sorted in two halves and merged, the Services come
// in the one order OlderFirst gives, ties of creation broken by
// namespace and name, whatever order they came in.
func TestSortOldestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, halvesSortedFrom - 1, halvesSortedFrom, halvesSortedFrom + 1, 5001} {
		svcs := make([]corev1.Service, n)
		for i := range svcs {
			svcs[i].Namespace = fmt.Sprintf("ns-%d", rng.IntN(3))
			svcs[i].Name = fmt.Sprintf("svc-%05d", i)
			// Few seconds for many Services: most share theirs with others.
			svcs[i].CreationTimestamp = metav1.NewTime(time.Unix(int64(rng.IntN(n/10+1)), 0))
		}
		in := make([]*corev1.Service, n)
		for i, j := range rng.Perm(n) {
			in[i] = &svcs[j]
		}
		want := slices.SortedFunc(slices.Values(slices.Clone(in)), OlderFirst)
		if got := sortOldestFirst(in); !slices.Equal(got, want) {
			t.Errorf("%d Services: sorted in halves, not in the order OlderFirst gives", n)
		}
	}
}
