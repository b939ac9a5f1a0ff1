package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Registry keeps a small JSON file of the open sessions so that they
// survive a server restart (as dormant sessions that resume on their next
// query). Writes are atomic (temp file + rename). Secrets never go in it:
// profile environments are stored by profile name only.
//
// Several server instances may share one registry (and the CLI's config
// directory, where the transcripts are): every write merges, under a lock
// file beside the registry, with what the others wrote. Per session the
// record changed since this instance last synced it wins (the most recently
// used one when both changed); a closed session leaves a tombstone so that
// no instance brings it back; costs are added as what this instance spent
// since its last write. An instance asked for a session it does not hold
// looks it up in the file and adopts it as dormant (Manager.Get), and a
// session's process runs on one instance at a time: an instance claims the
// session in the file before starting its process (a claim names the
// instance, its host and pid, and lasts leaseTTL unless renewed) and
// releases it when the process ends; a claim of another instance that is
// alive refuses the start with ErrElsewhere.
type Registry struct {
	path      string
	log       *slog.Logger
	mu        sync.Mutex
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
	Operator        []string      `json:"operator,omitempty"`  // options the operator chose (CreateOptions.Operator)
	AgentTool       string        `json:"agentTool,omitempty"` // the agent tool that started it (CreateOptions.AgentTool)
}

type registryFile struct {
	Version  int             `json:"version"`
	Sessions []RegistryEntry `json:"sessions"`
	// SpentUSD is what every session of this server has cost, closed ones
	// included: what --max-total-budget-usd counts against.
	SpentUSD float64 `json:"spentUsd,omitempty"`
	// UserSpentUSD is the same per user (over HTTP).
	UserSpentUSD map[string]float64 `json:"userSpentUsd,omitempty"`
	// Closed are the sessions closed lately, by when: tombstones that keep
	// an instance sharing the file from bringing them back.
	Closed map[string]time.Time `json:"closed,omitempty"`
	// Live are the claims on sessions whose process runs (or starts), by
	// session id.
	Live map[string]registryClaim `json:"live,omitempty"`
}

// registryClaim says which server instance runs a session's process.
type registryClaim struct {
	Instance string    `json:"instance"`
	Host     string    `json:"host,omitempty"`
	PIDNS    string    `json:"pidns,omitempty"` // Linux: the PID namespace, so that a pid is compared only within its own
	PID      int       `json:"pid"`
	Until    time.Time `json:"until"`
}

// ErrElsewhere is the error for a session whose process runs on another
// server instance sharing the registry.
var ErrElsewhere = errors.New("session is live on another server instance")

const (
	// leaseTTL is how long a claim holds without renewal: the time after
	// which a session of an instance that died without releasing it (on
	// another host; on the same host a dead pid frees it at once) may run
	// elsewhere.
	leaseTTL = 60 * time.Second
	// leaseRenew is how often an instance renews its claims.
	leaseRenew = 20 * time.Second
	// tombstoneAge is how long a closed session's tombstone is kept.
	tombstoneAge = 30 * 24 * time.Hour
)

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
	f, err := r.readLocked()
	if err != nil {
		r.log.Error("reading the session registry; starting without it", "path", r.path, "err", err)
		return nil
	}
	r.spent, r.userSpent = f.SpentUSD, f.UserSpentUSD
	return f.Sessions
}

// SpentUSD is the total cost, and the cost per user, the last Load read.
func (r *Registry) SpentUSD() (float64, map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spent, r.userSpent
}

// lookup reads the entry of the session id, unless the file lacks it or it
// was closed.
func (r *Registry) lookup(id string) (RegistryEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := r.readLocked()
	if err != nil {
		r.log.Warn("reading the session registry", "path", r.path, "err", err)
	}
	for _, e := range f.Sessions {
		if e.SessionID == id {
			return e, true
		}
	}
	return RegistryEntry{}, false
}

func (r *Registry) lockPath() string { return r.path + ".lock" }

// readLocked reads the file under the file lock, so that no merge changes
// it meanwhile (when the lock cannot be taken, it reads all the same); r.mu
// is held.
func (r *Registry) readLocked() (registryFile, error) {
	if unlock, err := lockFile(r.lockPath()); err == nil {
		defer unlock()
	}
	f, _, err := r.read()
	return f, err
}

// read reads the file and returns it with its bytes; r.mu (and the file
// lock, for a view that no merge changes meanwhile) is held. A missing file
// is empty; a corrupt one is moved aside and is empty. Entries without an
// id, and closed ones, are left out.
func (r *Registry) read() (registryFile, []byte, error) {
	var f registryFile
	data, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil, nil
	}
	if err != nil {
		return f, nil, err
	}
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
		return registryFile{}, nil, nil
	}
	f.Sessions = slices.DeleteFunc(f.Sessions, func(e RegistryEntry) bool {
		_, closed := f.Closed[e.SessionID]
		return e.SessionID == "" || closed
	})
	return f, data, nil
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

// Save replaces the stored entries and costs, atomically, under the file
// lock (tombstones and claims stay). The manager merges instead (see
// Manager.sync); Save is for tools and tests.
func (r *Registry) Save(entries []RegistryEntry, spentUSD float64, userSpentUSD map[string]float64) error {
	return r.update(func(f *registryFile, _ time.Time) {
		f.Sessions, f.SpentUSD, f.UserSpentUSD = entries, spentUSD, userSpentUSD
	})
}

// update changes the file under the lock: it reads it, lets change edit
// it, and writes it atomically unless it came out unchanged.
func (r *Registry) update(change func(f *registryFile, now time.Time)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return fmt.Errorf("creating the state directory: %w", err)
	}
	unlock, err := lockFile(r.lockPath())
	if err != nil {
		return fmt.Errorf("locking the session registry: %w", err)
	}
	defer unlock()
	f, old, err := r.read()
	if err != nil {
		return fmt.Errorf("reading the session registry: %w", err)
	}
	change(&f, time.Now().UTC())
	f.Version = 2
	if len(f.Closed) == 0 {
		f.Closed = nil
	}
	if len(f.Live) == 0 {
		f.Live = nil
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the session registry: %w", err)
	}
	if bytes.Equal(data, old) {
		return nil
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
	return nil
}

// shareState is what a manager keeps to share its registry with other
// instances.
type shareState struct {
	me registryClaim // this instance; Until is set at each write

	// saveMu orders merges (one at a time, so that no cost is added twice)
	// and adoptions; lock order: saveMu, then Manager.mu, then Session.mu.
	saveMu sync.Mutex
	// base is, per session this instance holds, its entry as this instance
	// last read it from the file or wrote it (JSON): what tells a change
	// made here from one made by another instance.
	base map[string]string

	// Under Manager.persistMu: what the next merge brings into the file.
	closed      []string           // sessions closed here
	unsaved     float64            // costs not yet added to the file's totals
	userUnsaved map[string]float64 // likewise per owner
	holding     bool               // the last merge left claims of this instance in the file

	stopOnce sync.Once
	stop     chan struct{} // stops the renewal of claims
	done     chan struct{} // closed when the renewal has stopped
}

// startSharing names this instance and starts renewing its claims.
func (m *Manager) startSharing() {
	sh := &m.share
	host, _ := os.Hostname()
	pidns, _ := os.Readlink("/proc/self/ns/pid")
	sh.me = registryClaim{Instance: uuid.NewString(), Host: host, PIDNS: pidns, PID: os.Getpid()}
	sh.base = map[string]string{}
	sh.stop, sh.done = make(chan struct{}), make(chan struct{})
	go m.renewClaims()
}

// stopSharing stops the renewal and writes the registry a last time, with
// the claims of the processes that have stopped released. Shutdown calls
// it once every process is gone.
func (m *Manager) stopSharing() {
	if m.cfg.Registry == nil {
		return
	}
	m.share.stopOnce.Do(func() {
		close(m.share.stop)
		<-m.share.done
	})
	m.persist()
}

// renewClaims writes the registry every leaseRenew while this instance has
// claims in it, so that they stay valid.
func (m *Manager) renewClaims() {
	defer close(m.share.done)
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-m.share.stop:
			return
		case <-t.C:
			m.persistMu.Lock()
			holding := m.share.holding
			m.persistMu.Unlock()
			if holding {
				m.persist()
			}
		}
	}
}

// foreign reports whether c is a valid claim of another instance: its
// lease runs, and, when it is of this host and PID namespace, its process
// is alive.
func (sh *shareState) foreign(c registryClaim, now time.Time) bool {
	if c.Instance == "" || c.Instance == sh.me.Instance || !now.Before(c.Until) {
		return false
	}
	if c.Host == sh.me.Host && c.PIDNS == sh.me.PIDNS && !processAlive(c.PID) {
		return false
	}
	return true
}

func elsewhereError(id string, c registryClaim) error {
	return fmt.Errorf("%w: session %s runs on another claude-agent-mcp instance sharing this server's session registry (pid %d on host %s); send the query to that instance (route by the Mcp-Session-Id header), or retry once the session is dormant there (its idle timeout, or that instance stopping, releases it)",
		ErrElsewhere, id, c.PID, c.Host)
}

// entryLocked is the session's registry entry; s.mu is held.
func (s *Session) entryLocked() RegistryEntry {
	return RegistryEntry{
		SessionID: s.ID, ClaudeSessionID: s.claudeSessionID, Resumable: s.resumable, ForkPending: s.forkPending, Model: s.model,
		Created: s.created, LastUsed: s.lastUsed, Queries: s.queries, CostUSD: s.cost, Usage: s.usage,
		Options: s.opts, Worktree: s.worktree, Owner: s.opts.Owner, Operator: s.opts.Operator,
		AgentTool: s.opts.AgentTool,
	}
}

// applyEntryLocked takes over what another instance recorded of the
// session; s.mu is held and the session has no process.
func (s *Session) applyEntryLocked(e RegistryEntry) {
	opts := e.Options
	opts.Owner, opts.Operator, opts.AgentTool, opts.Env, opts.Temporary = e.Owner, e.Operator, e.AgentTool, s.opts.Env, s.opts.Temporary
	s.opts = opts
	s.claudeSessionID, s.resumable, s.forkPending = e.ClaudeSessionID, e.Resumable, e.ForkPending
	s.model, s.created, s.lastUsed = e.Model, e.Created, e.LastUsed
	s.queries, s.cost, s.usage = e.Queries, e.CostUSD, e.Usage
	s.worktree = e.Worktree
}

// entryKey is an entry as JSON, to compare.
func entryKey(e RegistryEntry) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// persist writes the registry, if any, merging with what other instances
// wrote (see sync). Call it without holding any session's lock.
func (m *Manager) persist() {
	if m.cfg.Registry == nil {
		return
	}
	m.sync(nil)
}

// claim claims s in the registry before its process starts: it fails with
// ErrElsewhere while another live instance runs s, and with ErrClosed when
// another instance closed it; otherwise s takes over what other instances
// recorded of it since (their turns, a new Claude session id). A session
// the registry never held needs no claim, and an unwritable registry does
// not keep a session from running (it is reported as not persisted).
func (m *Manager) claim(s *Session) error {
	if m.cfg.Registry == nil {
		return nil
	}
	m.share.saveMu.Lock()
	_, known := m.share.base[s.ID]
	m.share.saveMu.Unlock()
	if !known {
		return nil
	}
	s.setState(StateStarting) // so that no merge meanwhile releases the claim
	return m.sync(s)
}

// released notes that s's process ended: the registry is written so that
// another instance may run s now. At shutdown, stopSharing writes once for
// all.
func (m *Manager) released(s *Session) {
	if m.cfg.Registry == nil || m.shuttingDown() {
		return
	}
	s.mu.Lock()
	temp := s.opts.Temporary
	s.mu.Unlock()
	if !temp {
		m.persist()
	}
}

// noteClosed records a tombstone for s, written with the next merge.
func (m *Manager) noteClosed(s *Session) {
	if m.cfg.Registry == nil {
		return
	}
	s.mu.Lock()
	temp := s.opts.Temporary
	s.mu.Unlock()
	if temp {
		return
	}
	m.persistMu.Lock()
	m.share.closed = append(m.share.closed, s.ID)
	m.persistMu.Unlock()
}

// sync merges this instance's sessions into the registry under its lock.
// Per session: a session whose process runs here is written as it is
// here, with this instance's claim; otherwise the side that changed since
// the last sync wins (both: the one used last), and this instance takes
// over the file's record when that wins. Sessions only the file has stay;
// sessions closed here get tombstones; sessions another instance closed
// are closed here too. The costs spent here since the last merge are added
// to the file's totals, and the totals read back. With claim set, s is
// claimed for a start (see Manager.claim) and the error says why it may
// not start; write errors are reported through PersistFailing.
func (m *Manager) sync(claim *Session) error {
	sh := &m.share
	sh.saveMu.Lock()
	type ours struct {
		s       *Session
		e       RegistryEntry
		live    bool // its process runs or starts here
		running bool // its process runs here
	}
	var mine []ours
	for _, s := range m.List() {
		s.mu.Lock()
		if !s.opts.Temporary && s.state != StateClosed {
			live := s.proc != nil || s.state == StateStarting || s.state == StateQueued || s.state == StateRunning
			mine = append(mine, ours{s, s.entryLocked(), live, s.proc != nil})
		}
		s.mu.Unlock()
	}
	m.persistMu.Lock()
	closed := slices.Clone(sh.closed)
	spent, userSpent := sh.unsaved, maps.Clone(sh.userUnsaved)
	m.persistMu.Unlock()

	type refresh struct {
		s *Session
		e RegistryEntry
	}
	var (
		take      []refresh
		gone      []*Session
		claimErr  error
		base      = map[string]string{}
		holding   bool
		total     float64
		userTotal map[string]float64
	)
	err := m.cfg.Registry.update(func(f *registryFile, now time.Time) {
		take, gone, claimErr, holding = nil, nil, nil, false
		clear(base)
		if f.Closed == nil {
			f.Closed = map[string]time.Time{}
		}
		if f.Live == nil {
			f.Live = map[string]registryClaim{}
		}
		for _, id := range closed {
			f.Closed[id] = now
		}
		for id, at := range f.Closed {
			if now.Sub(at) > tombstoneAge {
				delete(f.Closed, id)
			}
		}
		for id, c := range f.Live {
			if _, ok := f.Closed[id]; ok || (c.Instance != sh.me.Instance && !sh.foreign(c, now)) {
				delete(f.Live, id) // closed, expired, or of a dead process
			}
		}
		f.Sessions = slices.DeleteFunc(f.Sessions, func(e RegistryEntry) bool {
			_, ok := f.Closed[e.SessionID]
			return ok
		})
		index := map[string]int{}
		for i, e := range f.Sessions {
			index[e.SessionID] = i
		}
		for _, o := range mine {
			id := o.s.ID
			if _, ok := f.Closed[id]; ok {
				gone = append(gone, o.s)
				if o.s == claim {
					claimErr = fmt.Errorf("%w: session %s was closed on another claude-agent-mcp instance sharing this server's session registry", ErrClosed, id)
				}
				continue
			}
			c, claimed := f.Live[id]
			foreign := claimed && sh.foreign(c, now)
			mineKey := entryKey(o.e)
			i, inFile := index[id]
			takeFile := false
			if inFile {
				fileKey := entryKey(f.Sessions[i])
				prev, synced := sh.base[id]
				switch {
				case fileKey == mineKey:
				case foreign:
					takeFile = true // the instance that runs it knows best
				case o.live && o.s != claim:
					// It runs here: no other instance changed it meanwhile.
				case synced && mineKey == prev:
					takeFile = true
				case synced && fileKey == prev:
				default:
					takeFile = f.Sessions[i].LastUsed.After(o.e.LastUsed)
				}
				if takeFile {
					take = append(take, refresh{o.s, f.Sessions[i]})
					base[id] = fileKey
				} else {
					f.Sessions[i] = o.e
					base[id] = mineKey
				}
			} else {
				f.Sessions = append(f.Sessions, o.e)
				base[id] = mineKey
			}
			switch {
			case foreign && o.s == claim:
				claimErr = elsewhereError(id, c)
			case foreign && o.running:
				m.log.Error("a session runs here while another instance claims it (this instance could not renew its claim in time?)",
					"session_id", id, "other_pid", c.PID, "other_host", c.Host)
			case o.live && !foreign:
				me := sh.me
				me.Until = now.Add(leaseTTL)
				f.Live[id] = me
				holding = true
			case claimed && c.Instance == sh.me.Instance:
				delete(f.Live, id)
			}
		}
		f.SpentUSD += spent
		for u, v := range userSpent {
			if f.UserSpentUSD == nil {
				f.UserSpentUSD = map[string]float64{}
			}
			f.UserSpentUSD[u] += v
		}
		total, userTotal = f.SpentUSD, maps.Clone(f.UserSpentUSD)
	})

	m.persistMu.Lock()
	was := m.persistErr
	m.persistErr = err
	if err == nil {
		// What was written is in the file's totals now; what came since
		// waits for the next merge.
		sh.closed = sh.closed[len(closed):]
		sh.unsaved -= spent
		m.spent = total + sh.unsaved
		for u, v := range userSpent {
			sh.userUnsaved[u] -= v
		}
		m.userSpent = userTotal
		for u, v := range sh.userUnsaved {
			if v != 0 {
				if m.userSpent == nil {
					m.userSpent = map[string]float64{}
				}
				m.userSpent[u] += v
			}
		}
		sh.holding = holding
	}
	m.persistMu.Unlock()
	if err == nil {
		sh.base = base
		for _, r := range take {
			r.s.mu.Lock()
			if r.s.proc == nil {
				r.s.applyEntryLocked(r.e)
				path := r.s.transcriptPath()
				r.s.mu.Unlock()
				h, herr := loadTranscript(path)
				if herr != nil {
					r.s.log.Warn("reading the transcript for the history", "path", path, "err", herr)
				}
				r.s.mu.Lock()
				r.s.setHistoryLocked(h)
			}
			r.s.mu.Unlock()
		}
	}
	sh.saveMu.Unlock()

	switch {
	case err != nil && was == nil:
		m.log.Error("saving the session registry: sessions will not survive a restart until it can be written", "err", err)
	case err == nil && was != nil:
		m.log.Info("the session registry is written again")
	}
	for _, s := range gone {
		m.mu.Lock()
		if m.sessions[s.ID] == s {
			delete(m.sessions, s.ID)
		}
		m.mu.Unlock()
		s.mu.Lock()
		s.worktree = nil // the instance that closed it dealt with its worktree
		s.mu.Unlock()
		s.log.Info("closed on another instance sharing the session registry")
		s.close()
	}
	return claimErr
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
	m.startSharing()
	entries := m.cfg.Registry.Load()
	m.spent, m.userSpent = m.cfg.Registry.SpentUSD()
	m.userSpent = maps.Clone(m.userSpent)
	entries = slices.DeleteFunc(entries, func(e RegistryEntry) bool { return e.SessionID == "" })
	slices.SortStableFunc(entries, func(a, b RegistryEntry) int { return b.LastUsed.Compare(a.LastUsed) })
	if n := len(entries) - m.cfg.MaxSessions; n > 0 {
		for _, e := range entries[m.cfg.MaxSessions:] {
			m.log.Warn("not restoring a session beyond --max-sessions; it stays in the registry (a query by its id takes it up once there is room) and its conversation on disk (continue it with resumeSessionId)",
				"session_id", e.SessionID, "claude_session_id", e.ClaudeSessionID, "max_sessions", m.cfg.MaxSessions)
		}
		entries = entries[:m.cfg.MaxSessions]
	}
	for _, e := range entries {
		s := m.restoreOne(e)
		m.sessions[s.ID] = s
		m.share.base[s.ID] = entryKey(e)
	}
	if n := len(m.sessions); n > 0 {
		m.log.Info("restored sessions from the registry as dormant", "count", n, "path", m.cfg.Registry.Path())
	}
}

// restoreOne makes a dormant session of a registry entry, refused when
// today's policy does not let it run.
func (m *Manager) restoreOne(e RegistryEntry) *Session {
	e.Options.Owner, e.Options.Operator, e.Options.AgentTool = e.Owner, e.Operator, e.AgentTool
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
	return s
}

// adopt takes up a session this instance does not hold from the registry,
// as dormant (refused when today's policy does not let it run): one another
// instance sharing the registry made, or one beyond --max-sessions at the
// start. It fails with the not-found error when the registry has no such
// open session.
func (m *Manager) adopt(id string) (*Session, error) {
	if m.cfg.Registry == nil || id == "" {
		return nil, NotFoundError(id)
	}
	sh := &m.share
	sh.saveMu.Lock()
	defer sh.saveMu.Unlock()
	m.mu.Lock()
	s, stopping := m.sessions[id], m.closed
	m.mu.Unlock()
	if s != nil {
		return s, nil
	}
	if stopping {
		return nil, NotFoundError(id)
	}
	e, ok := m.cfg.Registry.lookup(id)
	if !ok {
		return nil, NotFoundError(id)
	}
	s = m.restoreOne(e)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if n := len(m.sessions); n >= m.cfg.MaxSessions {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: session %s is in the session registry, but %d sessions are open on this instance and --max-sessions is %d", ErrTooMany, id, n, m.cfg.MaxSessions)
	}
	m.sessions[id] = s
	m.mu.Unlock()
	sh.base[id] = entryKey(e)
	s.log.Info("took up a session from the session registry as dormant (made or last run by another instance, or not restored at the start)", "claude_session_id", e.ClaudeSessionID)
	return s, nil
}
