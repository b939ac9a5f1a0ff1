package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Registry keeps a small JSON file of the open sessions so that they
// survive a server restart (as dormant sessions that resume on their next
// query). Writes are atomic (temp file + rename). Secrets never go in it:
// profile environments are stored by profile name only.
type Registry struct {
	path string
	log  *slog.Logger
	mu   sync.Mutex
	last []byte
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
}

type registryFile struct {
	Version  int             `json:"version"`
	Sessions []RegistryEntry `json:"sessions"`
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
	if err := json.Unmarshal(data, &f); err != nil {
		aside := fmt.Sprintf("%s.corrupt-%s", r.path, time.Now().UTC().Format("20060102T150405"))
		if rerr := os.Rename(r.path, aside); rerr != nil {
			r.log.Error("the session registry is corrupt and could not be moved aside", "path", r.path, "err", err, "rename_err", rerr)
		} else {
			r.log.Error("the session registry is corrupt; moved it aside and starting empty", "path", r.path, "moved_to", aside, "err", err)
		}
		return nil
	}
	r.last = data
	return f.Sessions
}

// Save replaces the stored entries, atomically.
func (r *Registry) Save(entries []RegistryEntry) error {
	data, err := json.MarshalIndent(registryFile{Version: 1, Sessions: entries}, "", "  ")
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
			opts := s.opts
			opts.Env = nil
			entries = append(entries, RegistryEntry{
				SessionID: s.ID, ClaudeSessionID: s.claudeSessionID, Resumable: s.resumable, ForkPending: s.forkPending, Model: s.model,
				Created: s.created, LastUsed: s.lastUsed, Queries: s.queries, CostUSD: s.cost, Usage: s.usage,
				Options: opts,
			})
		}
		s.mu.Unlock()
	}
	if err := m.cfg.Registry.Save(entries); err != nil {
		m.log.Error("saving the session registry", "err", err)
	}
}

// restore loads the registry's sessions as dormant sessions.
func (m *Manager) restore() {
	if m.cfg.Registry == nil {
		return
	}
	for _, e := range m.cfg.Registry.Load() {
		if e.SessionID == "" {
			continue
		}
		s := newSession(m, e.Options)
		s.ID = e.SessionID
		s.log = m.log.With("session_id", s.ID)
		s.claudeSessionID, s.resumable, s.forkPending = e.ClaudeSessionID, e.Resumable, e.ForkPending
		s.model, s.created, s.lastUsed = e.Model, e.Created, e.LastUsed
		s.queries, s.cost, s.usage = e.Queries, e.CostUSD, e.Usage
		s.state = StateDormant
		if env, err := m.profileEnv(e.Options.Profile); err != nil {
			s.state, s.failure = StateFailed, err.Error()
		} else {
			s.opts.Env = env
		}
		s.loadHistory()
		m.sessions[s.ID] = s
	}
	if n := len(m.sessions); n > 0 {
		m.log.Info("restored sessions from the registry as dormant", "count", n, "path", m.cfg.Registry.Path())
	}
}

func (m *Manager) profileEnv(name string) (map[string]string, error) {
	if name == "" || m.cfg.ProfileEnv == nil {
		return nil, nil
	}
	return m.cfg.ProfileEnv(name)
}
