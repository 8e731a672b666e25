package objsync

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestWishesSet(t *testing.T) {
	svc := types.NamespacedName{Namespace: "ns", Name: "web"}
	none := func(types.NamespacedName) bool { return false }
	some := func(types.NamespacedName) bool { return true }
	tests := []struct {
		name   string
		before [][]string // wishes set first, in order
		next   []string
		held   func(types.NamespacedName) bool
		write  bool
		kept   bool // a wish for svc remains in the map
	}{
		{name: "a first wish for an object", next: []string{"r1"}, held: none, write: true, kept: true},
		{name: "a first wish for no object, none held", next: nil, held: none, write: false, kept: false},
		{name: "a first wish for no object, one held (adopted or on its way)", next: nil, held: some, write: true, kept: true},
		{name: "the same wish again", before: [][]string{{"r1"}}, next: []string{"r1"}, held: none, write: false, kept: true},
		{name: "a changed wish", before: [][]string{{"r1"}}, next: []string{"r1", "r2"}, held: none, write: true, kept: true},
		{name: "an object no longer wanted", before: [][]string{{"r1"}}, next: nil, held: none, write: true, kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWishes(func(p []string) bool { return len(p) == 0 }, slices.Equal[[]string])
			for _, b := range tt.before {
				w.set(svc, b, tt.held)
			}
			if got := w.set(svc, tt.next, tt.held); got != tt.write {
				t.Errorf("set queues a write: got %v, want %v", got, tt.write)
			}
			if _, got := w.m[svc]; got != tt.kept {
				t.Errorf("wish kept: got %v, want %v", got, tt.kept)
			}
			if got, want := w.wanted(svc), len(tt.next) > 0; got != want {
				t.Errorf("wanted: got %v, want %v", got, want)
			}
		})
	}
}

// TestWishesForgetIfEmpty: a wish for no object is dropped once carried
// out, a newer wish for one is not.
func TestWishesForgetIfEmpty(t *testing.T) {
	svc := types.NamespacedName{Namespace: "ns", Name: "web"}
	held := func(types.NamespacedName) bool { return true }
	w := newWishes(func(p []string) bool { return len(p) == 0 }, slices.Equal[[]string])
	w.set(svc, []string{"r1"}, held)
	w.forgetIfEmpty(svc)
	if !w.wanted(svc) {
		t.Fatal("a wish for an object was forgotten")
	}
	w.set(svc, nil, held)
	w.forgetIfEmpty(svc)
	if _, ok := w.m[svc]; ok {
		t.Fatal("a carried-out wish for no object stayed")
	}
	if got := w.get(svc); got != nil {
		t.Fatalf("get after forgetting: %v, want none", got)
	}
}
