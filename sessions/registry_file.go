package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Registry keeps a small JSON file of the open sessions so that they
// survive a server restart (as dormant sessions that resume on their next
// query). Secrets never go in it: profile environments are stored by
// profile name only.
//
// A write goes to a temporary file, which is synced to disk and renamed over
// the registry, and the directory is synced; the previous good file stays
// as <path>.bak. A file that does not parse is moved aside and the backup
// restored. A file over maxRegistrySize is refused, never read.
//
// Several server instances may share one registry (and the CLI's config
// directory, where the transcripts are): every write merges, under a lock
// file beside the registry, with what the others wrote; see
// registry_share.go.
type Registry struct {
	path      string
	log       *slog.Logger
	mu        sync.Mutex
	spent     float64            // as of the last Load
	userSpent map[string]float64 // likewise

	maxSize       int64 // the largest file read; maxRegistrySize, smaller in tests
	maxTombstones int   // tombstones kept at most; maxTombstones, smaller in tests

	// last is the file as this registry last read or wrote it, under mu:
	// it is read and decoded again only when it changed since (another
	// instance wrote it).
	last struct {
		info os.FileInfo
		data []byte
		f    registryFile
	}
}

// RegistryEntry is one persisted session.
type RegistryEntry struct {
	SessionID       string `json:"sessionId"`
	ClaudeSessionID string `json:"claudeSessionId"`
	// PastClaudeSessionIDs are the Claude session ids the session had
	// before ClaudeSessionID (a replay after a lost transcript starts a new
	// conversation): conversations it made, whose owner is Owner.
	PastClaudeSessionIDs []string      `json:"pastClaudeSessionIds,omitempty"`
	Resumable            bool          `json:"resumable"`
	ForkPending          bool          `json:"forkPending,omitempty"`
	Model                string        `json:"model,omitempty"`
	Created              time.Time     `json:"created"`
	LastUsed             time.Time     `json:"lastUsed"`
	Queries              int           `json:"queries"`
	CostUSD              float64       `json:"costUsd"`
	Usage                Usage         `json:"usage"`
	Options              CreateOptions `json:"options"`
	Worktree             *Worktree     `json:"worktree,omitempty"`
	Owner                string        `json:"owner,omitempty"`
	Operator             []string      `json:"operator,omitempty"`  // options the operator chose (CreateOptions.Operator)
	AgentTool            string        `json:"agentTool,omitempty"` // the agent tool that started it (CreateOptions.AgentTool)
}

// registryVersion is the version this package writes: 3 has tombstone
// records and claim generations; 2 named the options' fields in JSON; 1
// stored the session's MCP servers as an --mcp-config document.
const registryVersion = 3

type registryFile struct {
	Version  int             `json:"version"`
	Sessions []RegistryEntry `json:"sessions"`
	// SpentUSD is what every session of this server has cost, closed ones
	// included: what --max-total-budget-usd counts against.
	SpentUSD float64 `json:"spentUsd,omitempty"`
	// UserSpentUSD is the same per user (over HTTP).
	UserSpentUSD map[string]float64 `json:"userSpentUsd,omitempty"`
	// Closed are the sessions closed lately: tombstones that keep an
	// instance sharing the file from bringing them back, and that remember
	// who made their conversations.
	Closed tombstoneMap `json:"closed,omitempty"`
	// ClosedHorizon is the latest close time of a tombstone dropped to keep
	// the file small (by age or count): an instance that last synced
	// before it cannot tell a session closed since from one the file lost.
	ClosedHorizon time.Time `json:"closedHorizon,omitzero"`
	// Live are the claims on sessions whose process runs (or starts), by
	// session id.
	Live map[string]registryClaim `json:"live,omitempty"`
	// ClaimGen is, per open session, the generation of its latest claim:
	// each new claim takes the next one, so an instance whose claim lapsed
	// and passed on sees that its generation is stale.
	ClaimGen map[string]uint64 `json:"claimGen,omitempty"`
}

// registryClaim says which server instance runs a session's process.
type registryClaim struct {
	Instance string    `json:"instance"`
	Host     string    `json:"host,omitempty"`
	PIDNS    string    `json:"pidns,omitempty"` // Linux: the PID namespace, so that a pid is compared only within its own
	PID      int       `json:"pid"`
	Gen      uint64    `json:"gen,omitempty"` // the claim's generation (see registryFile.ClaimGen)
	Until    time.Time `json:"until"`
}

const (
	// maxRegistrySize is the largest registry file read: a bigger one is
	// refused (an error naming the file and this cap), not read into
	// memory.
	maxRegistrySize = 64 << 20
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
	return &Registry{path: path, log: log, maxSize: maxRegistrySize, maxTombstones: maxTombstones}
}

// Path is the registry file.
func (r *Registry) Path() string { return r.path }

func (r *Registry) lockPath() string   { return r.path + ".lock" }
func (r *Registry) backupPath() string { return r.path + ".bak" }

// Load reads the entries. A missing file is empty; a corrupt one is
// reported, moved aside to <path>.corrupt-<time> and replaced by its
// backup (else treated as empty); one over the size cap is reported and
// treated as empty (and left alone).
func (r *Registry) Load() []RegistryEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, _, err := r.readLocked()
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
	f, _, err := r.readLocked()
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

// readLocked reads the file under the file lock, so that no merge changes
// it meanwhile (when the lock cannot be taken, it reads all the same); r.mu
// is held. It returns the file's information as read (nil when missing).
func (r *Registry) readLocked() (registryFile, os.FileInfo, error) {
	if unlock, err := lockFile(r.lockPath()); err == nil {
		defer unlock()
	}
	f, _, info, err := r.read()
	return f, info, err
}

// errTooLarge is the error for a registry over the size cap.
var errTooLarge = errors.New("the session registry is too large")

// readCapped reads a file of at most r.maxSize bytes, with its information.
func (r *Registry) readCapped(path string) ([]byte, os.FileInfo, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	tooLarge := fmt.Errorf("%w: %s is %d bytes, over the %d MiB this server reads; it was left as it is: move it aside or trim it (closed sessions and the claims are safe to drop)", errTooLarge, path, info.Size(), r.maxSize>>20)
	if info.Size() > r.maxSize {
		return nil, nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(fh, r.maxSize+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > r.maxSize { // it grew since the stat
		return nil, nil, tooLarge
	}
	return data, info, nil
}

// read reads the file and returns it with its bytes and information; r.mu
// (and the file lock, for a view that no merge changes meanwhile) is held.
// A missing file is empty; a corrupt one is moved aside and replaced by its
// backup, else empty. Entries without an id, and closed ones, are left out.
func (r *Registry) read() (registryFile, []byte, os.FileInfo, error) {
	if st, err := os.Stat(r.path); err == nil && sameFileInfo(r.last.info, st, nil) {
		return r.last.f.clone(), r.last.data, r.last.info, nil
	}
	r.last.info = nil
	data, info, err := r.readCapped(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return registryFile{}, nil, nil, nil
	}
	if err != nil {
		return registryFile{}, nil, nil, err
	}
	f, perr := parseRegistry(data)
	if perr == nil {
		r.last.info, r.last.data, r.last.f = info, data, f.clone()
		return f, data, info, nil
	}
	aside := fmt.Sprintf("%s.corrupt-%s", r.path, time.Now().UTC().Format("20060102T150405"))
	if rerr := os.Rename(r.path, aside); rerr != nil {
		r.log.Error("the session registry is corrupt and could not be moved aside", "path", r.path, "err", perr, "rename_err", rerr)
		return registryFile{}, nil, nil, nil
	}
	bak := r.backupPath()
	bdata, _, berr := r.readCapped(bak)
	var bf registryFile
	if berr == nil {
		bf, berr = parseRegistry(bdata)
	}
	if berr == nil {
		berr = writeFileSynced(r.path, bdata)
	}
	if berr != nil {
		r.log.Error("the session registry is corrupt; moved it aside and starting empty (no good backup)", "path", r.path, "moved_to", aside, "err", perr, "backup", bak, "backup_err", berr)
		return registryFile{}, nil, nil, nil
	}
	r.log.Error("the session registry is corrupt; moved it aside and restored the last good copy (what changed after that copy is lost)", "path", r.path, "moved_to", aside, "err", perr, "restored_from", bak)
	info, _ = os.Stat(r.path)
	return bf, bdata, info, nil
}

// parseRegistry decodes a registry file, upgrading older versions (a
// second decoding, only for them).
func parseRegistry(data []byte) (registryFile, error) {
	var f registryFile
	if err := json.Unmarshal(data, &f); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) || f.Version >= 3 {
			return f, err
		}
		// Version 2 tombstones are the close time alone.
		var v2 struct {
			Closed map[string]time.Time `json:"closed"`
		}
		if err := json.Unmarshal(data, &v2); err != nil {
			return f, err
		}
		f.Closed = make(tombstoneMap, len(v2.Closed))
		for id, at := range v2.Closed {
			f.Closed[id] = tombstone{Closed: at}
		}
	}
	if f.Version < 2 {
		if err := upgradeEntries(data, f.Sessions); err != nil {
			return f, err
		}
	}
	f.dropClosed()
	return f, nil
}

// dropClosed leaves out the entries without an id, and closed ones.
func (f *registryFile) dropClosed() {
	f.Sessions = slices.DeleteFunc(f.Sessions, func(e RegistryEntry) bool {
		_, closed := f.Closed[e.SessionID]
		return e.SessionID == "" || closed
	})
}

// clone is a copy of f that changes to it leave f as it is (entries and
// tombstones are replaced, never changed in place).
func (f registryFile) clone() registryFile {
	f.Sessions = slices.Clone(f.Sessions)
	f.UserSpentUSD = maps.Clone(f.UserSpentUSD)
	f.Closed = maps.Clone(f.Closed)
	f.Live = maps.Clone(f.Live)
	f.ClaimGen = maps.Clone(f.ClaimGen)
	return f
}

// encodeRegistry encodes f: the tombstones, most of it, with their own
// encoder (see tombstoneMap), the rest with encoding/json.
func encodeRegistry(f registryFile) ([]byte, error) {
	closed := f.Closed
	f.Closed = nil
	data, err := json.Marshal(f)
	if err != nil || len(closed) == 0 {
		return data, err
	}
	tail, _ := closed.MarshalJSON()
	out := make([]byte, 0, len(data)+len(tail)+12)
	out = append(out, data[:len(data)-1]...)
	out = append(out, `,"closed":`...)
	out = append(out, tail...)
	return append(out, '}'), nil
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
	_, err := r.update(func(f *registryFile, _ time.Time) {
		f.Sessions, f.SpentUSD, f.UserSpentUSD = entries, spentUSD, userSpentUSD
	})
	return err
}

// update changes the file under the lock: it reads it, lets change edit
// it, compacts the tombstones, and writes it (see writeFileSynced) unless
// it came out unchanged, keeping the previous file as the backup. It
// returns the file's information as it is now.
func (r *Registry) update(change func(f *registryFile, now time.Time)) (os.FileInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	unlock, err := lockFile(r.lockPath())
	if err != nil {
		return nil, fmt.Errorf("locking the session registry: %w", err)
	}
	defer unlock()
	f, old, info, err := r.read()
	if err != nil {
		return nil, fmt.Errorf("reading the session registry: %w", err)
	}
	now := time.Now().UTC()
	change(&f, now)
	compactTombstones(&f, now, r.maxTombstones)
	f.Version = registryVersion
	if len(f.Closed) == 0 {
		f.Closed = nil
	}
	if len(f.Live) == 0 {
		f.Live = nil
	}
	if len(f.ClaimGen) == 0 {
		f.ClaimGen = nil
	}
	data, err := encodeRegistry(f)
	if err != nil {
		return nil, fmt.Errorf("encoding the session registry: %w", err)
	}
	if bytes.Equal(data, old) {
		return info, nil
	}
	if old != nil {
		// The file as it was (it parsed) is the backup: a second name for
		// it, or, where links are not to be had, a copy.
		bak := r.backupPath()
		if err := os.Remove(bak); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("replacing the session registry's backup", "path", bak, "err", err)
		}
		if err := os.Link(r.path, bak); err != nil {
			if err := writeFileSynced(bak, old); err != nil {
				r.log.Warn("writing the session registry's backup", "path", bak, "err", err)
			}
		}
	}
	r.last.info = nil
	if err := writeFileSynced(r.path, data); err != nil {
		return nil, fmt.Errorf("writing the session registry: %w", err)
	}
	info, _ = os.Stat(r.path)
	if info != nil {
		f.dropClosed()
		r.last.info, r.last.data, r.last.f = info, data, f
	}
	return info, nil
}

// writeFileSynced replaces the file at path with data so that a crash
// leaves either the old file or the new one, complete: a temporary file
// beside it is written and synced to disk, renamed over path, and the
// directory synced.
func writeFileSynced(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable. Best effort: Windows cannot sync a
// directory (its renames are durable with the file system's journal).
func syncDir(dir string) {
	if runtime.GOOS == "windows" {
		return
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
