package upstream

import (
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogTo returns a slog.Logger that writes into log: the HTTP upstream
// transports (gateway/internal/upstreamhttp) log with slog, and their
// lines belong in the upstream's named logger.
func slogTo(log hclog.Logger) *slog.Logger {
	return slog.New(&hclogHandler{log: log})
}

// hclogHandler is a slog.Handler over an hclog.Logger.
type hclogHandler struct {
	log   hclog.Logger
	attrs []any
	group string
}

// Enabled reports whether log writes level l.
func (h *hclogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.IsTrace() || h.log.GetLevel() <= hclogLevel(l)
}

// Handle writes one record with its attributes as key/value pairs.
func (h *hclogHandler) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.key(a.Key), a.Value.Resolve().Any())
		return true
	})
	h.log.Log(hclogLevel(r.Level), r.Message, args...)
	return nil
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *hclogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]any(nil), h.attrs...)
	for _, a := range attrs {
		n.attrs = append(n.attrs, h.key(a.Key), a.Value.Resolve().Any())
	}
	return &n
}

// WithGroup returns a handler that prefixes later keys with name.
func (h *hclogHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.group = h.key(name)
	return &n
}

func (h *hclogHandler) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

func hclogLevel(l slog.Level) hclog.Level {
	switch {
	case l < slog.LevelInfo:
		return hclog.Debug
	case l < slog.LevelWarn:
		return hclog.Info
	case l < slog.LevelError:
		return hclog.Warn
	}
	return hclog.Error
}

var _ slog.Handler = (*hclogHandler)(nil)
