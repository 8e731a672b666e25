package servicelist

import (
	"os"
	"runtime/debug"
)

// gcLimit is where a short-lived lister starts collecting: about ten
// times what 10,000 Services take, decoded, replayed and printed.
const gcLimit = 1 << 30

// ShortLivedGC sets the collector of a process that lists every Service,
// answers and exits: it collects nothing until its heap nears 1 GiB. Such
// a process keeps nearly everything it allocates until it exits, so a
// collection frees little; yet one runs while the list is decoded (the
// heap passes its first goal there) and marks the growing list while it
// grows, which cost the plugin about 40 ms at 10,000 Services. GOGC or
// GOMEMLIMIT in the environment leave the collector as the runtime set
// it from them.
func ShortLivedGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcLimit)
}
