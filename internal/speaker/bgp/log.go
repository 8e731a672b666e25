package bgp

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// gobgpHandler hands GoBGP's slog records to our logr logger, and drops
// them all once quiet is set (while a server is being torn down, when
// GoBGP reports its own expected failures).
type gobgpHandler struct {
	log   logr.Logger
	quiet *atomic.Bool
	inner slog.Handler
}

func newGobgpHandler(log logr.Logger, quiet *atomic.Bool) *gobgpHandler {
	return &gobgpHandler{log: log, quiet: quiet, inner: logr.ToSlogHandler(log)}
}

func (h *gobgpHandler) handler() slog.Handler { return h.inner }

func (h *gobgpHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return !h.quiet.Load() && h.handler().Enabled(ctx, l)
}

func (h *gobgpHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.quiet.Load() {
		return nil
	}
	return h.handler().Handle(ctx, r)
}

func (h *gobgpHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &gobgpHandler{log: h.log, quiet: h.quiet, inner: h.handler().WithAttrs(as)}
}

func (h *gobgpHandler) WithGroup(name string) slog.Handler {
	return &gobgpHandler{log: h.log, quiet: h.quiet, inner: h.handler().WithGroup(name)}
}
