// Package debuglog turns a log handler into one that writes every record
// at debug level: for the MCP SDK's own lines (server run start, session
// connected, run cancelled at a clean stop), which are diagnostics, not
// news.
package debuglog

import (
	"context"
	"log/slog"
)

// Handler is h with every record at debug level, enabled when h is at
// debug.
func Handler(h slog.Handler) slog.Handler { return debugOnly{h} }

type debugOnly struct{ slog.Handler }

func (h debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.Handler.Enabled(ctx, slog.LevelDebug)
}

func (h debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return h.Handler.Handle(ctx, r)
}

func (h debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{h.Handler.WithAttrs(as)} }
func (h debugOnly) WithGroup(name string) slog.Handler    { return debugOnly{h.Handler.WithGroup(name)} }
