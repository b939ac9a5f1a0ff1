package sessions

import (
	"log/slog"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// The registry of sessions lives in package store (the file, its format,
// claims, tombstones, the merge); these names keep the manager's
// configuration as it was. The manager talks to it only through the
// store.Store interface, with plain records (share.go).
type (
	// Registry keeps the open sessions in a JSON file (see store.File).
	Registry = store.File
	// RegistryEntry is one persisted session (see store.Entry).
	RegistryEntry = store.Entry
)

// ErrElsewhere is the error for a session whose process runs on another
// server instance sharing the registry.
var ErrElsewhere = store.ErrElsewhere

// NewRegistry returns a registry stored at path.
func NewRegistry(path string, log *slog.Logger) *Registry { return store.NewFile(path, log) }

// DefaultRegistryPath is $XDG_STATE_HOME/claude-agent-mcp/sessions.json,
// else ~/.local/state/claude-agent-mcp/sessions.json.
func DefaultRegistryPath() (string, error) { return store.DefaultPath() }
