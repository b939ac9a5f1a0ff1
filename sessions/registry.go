package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Registry keeps a small JSON file of the open sessions so that they
// survive a server restart (as dormant sessions that resume on their next
// query). Writes are atomic (temp file + rename). Secrets never go in it:
// profile environments are stored by profile name only.
type Registry struct {
	path      string
	log       *slog.Logger
	mu        sync.Mutex
	last      []byte
	spent     float64            // as of the last Load
	userSpent map[string]float64 // likewise
}

// RegistryEntry is one persisted session.
type RegistryEntry struct {
	SessionID       string        `json:"sessionId"`
	ClaudeSessionID string        `json:"claudeSessionId"`
	Resumable       bool          `json:"resumable"`
	ForkPending     bool          `json:"forkPending,omitempty"`
	Model           string        `json:"model,omitempty"`
	Created         time.Time     `json:"created"`
	LastUsed        time.Time     `json:"lastUsed"`
	Queries         int           `json:"queries"`
	CostUSD         float64       `json:"costUsd"`
	Usage           Usage         `json:"usage"`
	Options         CreateOptions `json:"options"`
	Worktree        *Worktree     `json:"worktree,omitempty"`
	Owner           string        `json:"owner,omitempty"`
}

type registryFile struct {
	Version  int             `json:"version"`
	Sessions []RegistryEntry `json:"sessions"`
	// SpentUSD is what every session of this server has cost, closed ones
	// included: what --max-total-budget-usd counts against.
	SpentUSD float64 `json:"spentUsd,omitempty"`
	// UserSpentUSD is the same per user (over HTTP).
	UserSpentUSD map[string]float64 `json:"userSpentUsd,omitempty"`
}

// DefaultRegistryPath is $XDG_STATE_HOME/claude-agent-mcp/sessions.json,
// else ~/.local/state/claude-agent-mcp/sessions.json.
func DefaultRegistryPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the state directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "claude-agent-mcp", "sessions.json"), nil
}

// NewRegistry returns a registry stored at path.
func NewRegistry(path string, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{path: path, log: log}
}

// Path is the registry file.
func (r *Registry) Path() string { return r.path }

// Load reads the entries. A missing file is empty; a corrupt one is
// reported, moved aside to <path>.corrupt-<time> and treated as empty.
func (r *Registry) Load() []RegistryEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		r.log.Error("reading the session registry; starting without it", "path", r.path, "err", err)
		return nil
	}
	var f registryFile
	err = json.Unmarshal(data, &f)
	if err == nil {
		err = upgradeEntries(data, f.Sessions)
	}
	if err != nil {
		aside := fmt.Sprintf("%s.corrupt-%s", r.path, time.Now().UTC().Format("20060102T150405"))
		if rerr := os.Rename(r.path, aside); rerr != nil {
			r.log.Error("the session registry is corrupt and could not be moved aside", "path", r.path, "err", err, "rename_err", rerr)
		} else {
			r.log.Error("the session registry is corrupt; moved it aside and starting empty", "path", r.path, "moved_to", aside, "err", err)
		}
		return nil
	}
	r.last, r.spent, r.userSpent = data, f.SpentUSD, f.UserSpentUSD
	return f.Sessions
}

// SpentUSD is the total cost, and the cost per user, the last Load read.
func (r *Registry) SpentUSD() (float64, map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spent, r.userSpent
}

// upgradeEntries reads what version 1 files stored differently: the
// session's MCP servers as the --mcp-config document "MCPConfig".
func upgradeEntries(data []byte, entries []RegistryEntry) error {
	var v1 struct {
		Sessions []struct {
			Options struct {
				MCPConfig string `json:"MCPConfig"`
			} `json:"options"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(data, &v1); err != nil {
		return err
	}
	for i, e := range v1.Sessions {
		if doc := e.Options.MCPConfig; doc != "" && entries[i].Options.MCPServers == nil {
			var c struct {
				MCPServers map[string]json.RawMessage `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(doc), &c); err != nil {
				return fmt.Errorf("session %s: reading its MCPConfig: %w", entries[i].SessionID, err)
			}
			entries[i].Options.MCPServers = c.MCPServers
		}
	}
	return nil
}

// CheckWritable reports whether the registry can be written: its directory
// is made when missing and a file is created and removed there.
func (r *Registry) CheckWritable() error {
	dir := filepath.Dir(r.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// Save replaces the stored entries and costs, atomically.
func (r *Registry) Save(entries []RegistryEntry, spentUSD float64, userSpentUSD map[string]float64) error {
	data, err := json.MarshalIndent(registryFile{Version: 2, Sessions: entries, SpentUSD: spentUSD, UserSpentUSD: userSpentUSD}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the session registry: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if string(data) == string(r.last) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return fmt.Errorf("creating the state directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.path), ".sessions-*.json")
	if err != nil {
		return fmt.Errorf("writing the session registry: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), r.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing the session registry: %w", werr)
	}
	r.last = data
	return nil
}

// persist writes the registry, if any. Call it without holding any
// session's lock.
func (m *Manager) persist() {
	if m.cfg.Registry == nil {
		return
	}
	var entries []RegistryEntry
	for _, s := range m.List() {
		s.mu.Lock()
		if !s.opts.Temporary {
			entries = append(entries, RegistryEntry{
				SessionID: s.ID, ClaudeSessionID: s.claudeSessionID, Resumable: s.resumable, ForkPending: s.forkPending, Model: s.model,
				Created: s.created, LastUsed: s.lastUsed, Queries: s.queries, CostUSD: s.cost, Usage: s.usage,
				Options: s.opts, Worktree: s.worktree, Owner: s.opts.Owner,
			})
		}
		s.mu.Unlock()
	}
	spent, userSpent := m.spentAll()
	err := m.cfg.Registry.Save(entries, spent, userSpent)
	m.persistMu.Lock()
	was := m.persistErr
	m.persistErr = err
	m.persistMu.Unlock()
	switch {
	case err != nil && was == nil:
		m.log.Error("saving the session registry: sessions will not survive a restart until it can be written", "err", err)
	case err == nil && was != nil:
		m.log.Info("the session registry is written again")
	}
}

// PersistFailing reports whether sessions should survive a restart but do
// not: the last write of the registry failed.
func (m *Manager) PersistFailing() bool {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	return m.persistErr != nil
}

// restore loads the registry's sessions as dormant sessions: at most
// MaxSessions of them, the most recently used. Each is checked against
// today's policy at once, so that one the policy refuses is listed as
// refused (it is checked again at each query).
func (m *Manager) restore() {
	if m.cfg.Registry == nil {
		return
	}
	entries := m.cfg.Registry.Load()
	m.spent, m.userSpent = m.cfg.Registry.SpentUSD()
	entries = slices.DeleteFunc(entries, func(e RegistryEntry) bool { return e.SessionID == "" })
	slices.SortStableFunc(entries, func(a, b RegistryEntry) int { return b.LastUsed.Compare(a.LastUsed) })
	if n := len(entries) - m.cfg.MaxSessions; n > 0 {
		for _, e := range entries[m.cfg.MaxSessions:] {
			m.log.Warn("not restoring a session beyond --max-sessions; its conversation stays on disk (continue it with resumeSessionId)",
				"session_id", e.SessionID, "claude_session_id", e.ClaudeSessionID, "max_sessions", m.cfg.MaxSessions)
		}
		entries = entries[:m.cfg.MaxSessions]
	}
	for _, e := range entries {
		e.Options.Owner = e.Owner
		s := newSession(m, e.Options)
		s.ID = e.SessionID
		s.log = m.log.With("session_id", s.ID)
		s.claudeSessionID, s.resumable, s.forkPending = e.ClaudeSessionID, e.Resumable, e.ForkPending
		s.model, s.created, s.lastUsed = e.Model, e.Created, e.LastUsed
		s.queries, s.cost, s.usage = e.Queries, e.CostUSD, e.Usage
		s.worktree = e.Worktree
		s.state = StateDormant
		if _, err := m.admit(&s.opts); err != nil {
			s.state, s.failure = StateRefused, err.Error()
			s.log.Warn("restored a session that the server's policy refuses to run", "reason", err)
		}
		s.loadHistory()
		m.sessions[s.ID] = s
	}
	if n := len(m.sessions); n > 0 {
		m.log.Info("restored sessions from the registry as dormant", "count", n, "path", m.cfg.Registry.Path())
	}
}
