package speaker

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImports keeps the speaker apart from the controller: the two share
// only small packages of their own (internal/lbclass, internal/config), so
// nothing the controller registers or starts can end up in a speaker.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...", "../../cmd/speaker").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/steadylb/steadylb/internal/speaker") {
		t.Fatalf("go list -deps did not list the speaker itself; got %d packages", len(deps))
	}
	for _, forbidden := range []string{
		"github.com/steadylb/steadylb/internal/controller",
		"github.com/steadylb/steadylb/internal/inspect",
	} {
		if slices.Contains(deps, forbidden) {
			t.Errorf("the speaker's packages import %s", forbidden)
		}
	}
}
