package store

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

// File is a [Store] in a small JSON file, so that sessions survive a
// server restart (as dormant sessions that resume on their next query).
// Secrets never go in it: profile environments are stored by profile name
// only.
//
// A write goes to a temporary file, which is synced to disk and renamed over
// the registry, and the directory is synced; the previous good file stays
// as <path>.bak. A file that does not parse is moved aside and the backup
// restored. A file over maxFileSize is refused, never read.
//
// Several server instances may share one file (and the CLI's config
// directory, where the transcripts are): every Update runs under a lock
// file beside it (<path>.lock), so that each merges with what the others
// wrote.
type File struct {
	// MaxTombstones is how many tombstones Update keeps at most, the
	// oldest dropped first; 0 is DefaultMaxTombstones. Set it before use.
	MaxTombstones int
	// OnWrite, if set, is told how long each write of the registry took,
	// from Update's call (the wait for the locks included) to the synced
	// rename (metrics); it is called under the lock and must not block.
	// Set it before use.
	OnWrite func(time.Duration)

	path    string
	log     *slog.Logger
	mu      sync.Mutex
	maxSize int64 // the largest file read; maxFileSize, smaller in tests

	// last is the file as this File last read or wrote it, under mu: it is
	// read and decoded again only when it changed since (another instance
	// wrote it).
	last struct {
		info os.FileInfo
		data []byte
		f    State
	}
}

var _ Store = (*File)(nil)

// fileVersion is the version this package writes: 3 has tombstone
// records and claim generations; 2 named the options' fields in JSON; 1
// stored the session's MCP servers as an --mcp-config document.
const fileVersion = 3

// maxFileSize is the largest registry file read: a bigger one is refused
// (an error naming the file and this cap), not read into memory.
const maxFileSize = 64 << 20

// DefaultPath is $XDG_STATE_HOME/claude-agent-mcp/sessions.json, else
// ~/.local/state/claude-agent-mcp/sessions.json.
func DefaultPath() (string, error) {
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

// NewFile returns a store kept in the file at path.
func NewFile(path string, log *slog.Logger) *File {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &File{path: path, log: log, maxSize: maxFileSize}
}

// Path is the registry file.
func (r *File) Path() string { return r.path }

func (r *File) lockPath() string   { return r.path + ".lock" }
func (r *File) backupPath() string { return r.path + ".bak" }

// Load reads the entries. A missing file is empty; a corrupt one is
// reported, moved aside to <path>.corrupt-<time> and replaced by its
// backup (else treated as empty); one over the size cap is reported and
// treated as empty (and left alone).
func (r *File) Load() []Entry {
	f, _, err := r.Read()
	if err != nil {
		r.log.Error("reading the session registry; starting without it", "path", r.path, "err", err)
		return nil
	}
	return f.Sessions
}

// Read implements [Store]: it reads the file under the file lock, so that
// no Update changes it meanwhile (when the lock cannot be taken, it reads
// all the same). Its stamp is the file's information as read (nil when
// missing).
func (r *File) Read() (State, Stamp, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if unlock, err := lockFile(r.lockPath()); err == nil {
		defer unlock()
	}
	f, _, info, err := r.read()
	return f, info, err
}

// Changed implements [Store]: a stat of the file, compared with the
// information stamp holds.
func (r *File) Changed(stamp Stamp) bool {
	seen, _ := stamp.(os.FileInfo)
	st, err := os.Stat(r.path)
	return !sameFileInfo(seen, st, err)
}

// sameFileInfo reports whether the file now (or the error of its stat) is
// the one seen: the same file, size and modification time; or, when there
// is none to stat, none was seen either.
func sameFileInfo(seen, now os.FileInfo, err error) bool {
	if err != nil {
		return seen == nil
	}
	return seen != nil && os.SameFile(seen, now) && seen.Size() == now.Size() && seen.ModTime().Equal(now.ModTime())
}

// ErrTooLarge is the error for a registry file over the size cap.
var ErrTooLarge = errors.New("the session registry is too large")

// readCapped reads a file of at most r.maxSize bytes, with its information.
func (r *File) readCapped(path string) ([]byte, os.FileInfo, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	tooLarge := fmt.Errorf("%w: %s is %d bytes, over the %d MiB this server reads; it was left as it is: move it aside or trim it (closed sessions and the claims are safe to drop)", ErrTooLarge, path, info.Size(), r.maxSize>>20)
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
func (r *File) read() (State, []byte, os.FileInfo, error) {
	if st, err := os.Stat(r.path); err == nil && sameFileInfo(r.last.info, st, nil) {
		return r.last.f.clone(), r.last.data, r.last.info, nil
	}
	r.last.info = nil
	data, info, err := r.readCapped(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, nil, nil, nil
	}
	if err != nil {
		return State{}, nil, nil, err
	}
	f, perr := parseFile(data)
	if perr == nil {
		r.last.info, r.last.data, r.last.f = info, data, f.clone()
		return f, data, info, nil
	}
	aside := fmt.Sprintf("%s.corrupt-%s", r.path, time.Now().UTC().Format("20060102T150405"))
	if rerr := os.Rename(r.path, aside); rerr != nil {
		r.log.Error("the session registry is corrupt and could not be moved aside", "path", r.path, "err", perr, "rename_err", rerr)
		return State{}, nil, nil, nil
	}
	bak := r.backupPath()
	bdata, _, berr := r.readCapped(bak)
	var bf State
	if berr == nil {
		bf, berr = parseFile(bdata)
	}
	if berr == nil {
		berr = writeFileSynced(r.path, bdata)
	}
	if berr != nil {
		r.log.Error("the session registry is corrupt; moved it aside and starting empty (no good backup)", "path", r.path, "moved_to", aside, "err", perr, "backup", bak, "backup_err", berr)
		return State{}, nil, nil, nil
	}
	r.log.Error("the session registry is corrupt; moved it aside and restored the last good copy (what changed after that copy is lost)", "path", r.path, "moved_to", aside, "err", perr, "restored_from", bak)
	info, _ = os.Stat(r.path)
	return bf, bdata, info, nil
}

// Parse decodes the contents of a registry file as Read would (older
// versions upgraded, closed sessions left out): for tools that move a
// registry into another store.
func Parse(data []byte) (State, error) { return parseFile(data) }

// parseFile decodes a registry file, upgrading older versions (a
// second decoding, only for them).
func parseFile(data []byte) (State, error) {
	var f State
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
		f.Closed = make(Tombstones, len(v2.Closed))
		for id, at := range v2.Closed {
			f.Closed[id] = Tombstone{Closed: at}
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
func (f *State) dropClosed() {
	f.Sessions = slices.DeleteFunc(f.Sessions, func(e Entry) bool {
		_, closed := f.Closed[e.SessionID]
		return e.SessionID == "" || closed
	})
}

// clone is a copy of f that changes to it leave f as it is (entries and
// tombstones are replaced, never changed in place).
func (f State) clone() State {
	f.Sessions = slices.Clone(f.Sessions)
	f.UserSpentUSD = maps.Clone(f.UserSpentUSD)
	f.Closed = maps.Clone(f.Closed)
	f.Live = maps.Clone(f.Live)
	f.ClaimGen = maps.Clone(f.ClaimGen)
	return f
}

// encodeFile encodes f: the tombstones, most of it, with their own
// encoder (see Tombstones), the rest with encoding/json.
func encodeFile(f State) ([]byte, error) {
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
func upgradeEntries(data []byte, entries []Entry) error {
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
func (r *File) CheckWritable() error {
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
// lock (tombstones and claims stay). Instances merge instead (see Merge);
// Save is for tools and tests.
func (r *File) Save(entries []Entry, spentUSD float64, userSpentUSD map[string]float64) error {
	_, err := r.Update(func(f *State, _ time.Time) {
		f.Sessions, f.SpentUSD, f.UserSpentUSD = entries, spentUSD, userSpentUSD
	})
	return err
}

// Update implements [Store]: under the lock it reads the file, lets change
// edit it, compacts the tombstones, and writes it (see writeFileSynced)
// unless it came out unchanged, keeping the previous file as the backup.
// Its stamp is the file's information as it is now.
func (r *File) Update(change func(f *State, now time.Time)) (Stamp, error) {
	began := time.Now()
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
	keep := r.MaxTombstones
	if keep <= 0 {
		keep = DefaultMaxTombstones
	}
	compactTombstones(&f, now, keep)
	f.Version = fileVersion
	if len(f.Closed) == 0 {
		f.Closed = nil
	}
	if len(f.Live) == 0 {
		f.Live = nil
	}
	if len(f.ClaimGen) == 0 {
		f.ClaimGen = nil
	}
	data, err := encodeFile(f)
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
	if r.OnWrite != nil {
		r.OnWrite(time.Since(began))
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
