package speaker

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/steadylb/steadylb/test/fixture"
)

// TestStaleObjectsFromAnEarlierRun: objects this node left behind are
// deleted when it starts, unless it still announces their Service, in
// which case the object is kept and brought up to date.
func TestStaleObjectsFromAnEarlierRun(t *testing.T) {
	l := prepareLab(t, "a")
	l.pool("lan", []string{"198.51.100.192/28"})
	const addr = "198.51.100.193"
	kept := l.service("web", []string{addr}, nil)
	idle := l.service("idle", []string{"198.51.100.194"}, nil)
	l.endpoints(idle) // no endpoints: not announced
	node := l.node("a")
	keep := l.createStatus(node, kept, addr)
	gone := l.createStatus(node, types.NamespacedName{Namespace: l.ns, Name: "deleted-meanwhile"}, "198.51.100.195")
	unused := l.createStatus(node, idle, "198.51.100.194")
	duplicate := l.createStatus(node, kept, addr)

	l.startAll()
	l.waitAnswered(addr, "a")
	fixture.WaitFor(t, "the stale objects and one of the duplicates to be deleted", func() bool {
		return !exists(gone) && !exists(unused) && exists(keep) != exists(duplicate)
	})
	list := l.statuses(kept)
	if len(list) != 1 || (list[0].Name != keep.Name && list[0].Name != duplicate.Name) {
		t.Fatalf("objects of the announced Service: %d, want one of the adopted ones", len(list))
	}
	fixture.WaitFor(t, "the adopted object's status to be filled in", func() bool {
		list := l.statuses(kept)
		return len(list) == 1 && list[0].Status.Node == node && list[0].Status.ServiceName == kept.Name
	})
}
