package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/syncbuf"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// loggerTo is a logger writing to l.
func loggerTo(l *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// readFile reads the registry file as it is, tombstones and claims
// included.
func readFile(t testing.TB, path string) State {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f State
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("the registry does not parse: %v\n%s", err, data)
	}
	return f
}

func fileIDs(path string) []string {
	var ids []string
	for _, e := range NewFile(path, nil).Load() {
		ids = append(ids, e.SessionID)
	}
	slices.Sort(ids)
	return ids
}

// TestRegistryBackup: every write keeps the previous file as <path>.bak; a
// registry that does not parse is moved aside and the backup restored in
// its place, with an error in the log.
func TestRegistryBackup(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	var log syncbuf.Buffer
	r := NewFile(path, loggerTo(&log))
	first := []Entry{{SessionID: "s1", ClaudeSessionID: "c1"}}
	second := append(slices.Clone(first), Entry{SessionID: "s2", ClaudeSessionID: "c2"})
	for _, entries := range [][]Entry{first, second} {
		if err := r.Save(entries, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.SessionID)
		}
		return out
	}
	if got := ids(NewFile(path+".bak", nil).Load()); !slices.Equal(got, []string{"s1"}) {
		t.Errorf("the backup holds %v, want the previous file's [s1]", got)
	}
	if err := os.WriteFile(path, []byte(`{"version":3,"sessions":[{"sessionId":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ids(r.Load()); !slices.Equal(got, []string{"s1"}) {
		t.Errorf("Load of a corrupt registry = %v, want the backup's [s1]", got)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved-aside files: %v", aside)
	}
	if got := ids(NewFile(path, nil).Load()); !slices.Equal(got, []string{"s1"}) {
		t.Errorf("the registry after the restore holds %v, want [s1]", got)
	}
	l := log.String()
	if !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "restored the last good copy") || !strings.Contains(l, aside[0]) || !strings.Contains(l, path+".bak") {
		t.Errorf("the log does not say what happened:\n%s", l)
	}
}

// TestRegistryTooLarge: a registry over the size cap is refused with an
// error naming it and the cap, not read into memory, and left as it is.
// Not parallel: it measures what the process allocates.
func TestRegistryTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const size = 300 << 20
	if err := f.Truncate(size); err != nil { // sparse: no disk space
		t.Fatal(err)
	}
	f.Close()
	var log syncbuf.Buffer
	r := NewFile(path, loggerTo(&log))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := r.Load()
	err = r.Save([]Entry{{SessionID: "s1"}}, 0, nil)
	runtime.ReadMemStats(&after)
	if len(got) != 0 {
		t.Errorf("Load = %v", got)
	}
	want := fmt.Sprintf("%s is %d bytes, over the 64 MiB", path, size)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), want) {
		t.Errorf("Save over a too large registry: %v; want an error saying %q", err, want)
	}
	if l := log.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, want) {
		t.Errorf("the log does not report the too large registry:\n%s", l)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("reading a too large registry allocated %d MiB", n>>20)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != size {
		t.Errorf("the too large registry was not left as it was: %v %v", st, err)
	}
}

// TestRegistryTombstoneRecords: version 2 tombstones (the close time alone)
// are read, and kept as records at the next write.
func TestRegistryTombstoneRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	closed := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	v2 := fmt.Sprintf(`{"version":2,"sessions":[{"sessionId":"s1","claudeSessionId":"c1"},{"sessionId":"gone","claudeSessionId":"c0"}],"closed":{"gone":%q}}`, closed.Format(time.RFC3339))
	if err := os.WriteFile(path, []byte(v2), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := fileIDs(path); !slices.Equal(got, []string{"s1"}) {
		t.Errorf("Load = %v, want [s1]", got)
	}
	if err := NewFile(path, nil).Save([]Entry{{SessionID: "s1"}, {SessionID: "s2"}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	f := readFile(t, path)
	if f.Version != fileVersion || !f.Closed["gone"].Closed.Equal(closed) {
		t.Errorf("after a write: version %d, tombstones %+v", f.Version, f.Closed)
	}
}

// TestTombstoneCodec: the tombstones' own encoder and scanner agree with
// encoding/json: what the encoder writes reads back the same, by the scan
// when nothing needs escaping and by encoding/json otherwise.
func TestTombstoneCodec(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 15, 7, 1, 123456789, time.UTC)
	for name, tc := range map[string]struct {
		m       Tombstones
		scanned bool
	}{
		"plain": {Tombstones{
			"s1": {Closed: at, Owner: "alice", ClaudeSessionIDs: []string{"c1", "c2"}},
			"s2": {Closed: at.Add(time.Second)},
			"s3": {Owner: "bob"},
		}, true},
		"empty":   {Tombstones{}, true},
		"escaped": {Tombstones{"s1": {Closed: at, Owner: "a\"b\\c é\n", ClaudeSessionIDs: []string{"<c1>"}}}, false},
	} {
		data, err := json.Marshal(tc.m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !json.Valid(data) {
			t.Fatalf("%s: invalid JSON %s", name, data)
		}
		var plain map[string]Tombstone
		if err := json.Unmarshal(data, &plain); err != nil {
			t.Fatalf("%s: encoding/json reads %s: %v", name, data, err)
		}
		var got Tombstones
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := scanTombstones(data); ok != tc.scanned {
			t.Errorf("%s: scanned %v, want %v: %s", name, ok, tc.scanned, data)
		}
		for _, m := range []map[string]Tombstone{plain, got} {
			if len(m) != len(tc.m) {
				t.Errorf("%s: read %v, want %v", name, m, tc.m)
			}
			for id, want := range tc.m {
				have := m[id]
				if !have.Closed.Equal(want.Closed) || have.Owner != want.Owner || !slices.Equal(have.ClaudeSessionIDs, want.ClaudeSessionIDs) {
					t.Errorf("%s: %s read %+v, want %+v", name, id, have, want)
				}
			}
		}
	}
}

func TestRegistryRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "sessions.json")
	r := NewFile(path, nil)
	if got := r.Load(); len(got) != 0 {
		t.Fatalf("Load of a missing file = %+v", got)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	entries := []Entry{
		{SessionID: "s1", ClaudeSessionID: "c1", Resumable: true, Model: "claude-sonnet-5", Created: at, LastUsed: at.Add(time.Hour),
			Queries: 3, CostUSD: 0.125, Usage: Usage{1, 2, 3, 4},
			Options: options.CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash(git:*)"}, MaxTurns: 4, AddDirs: []string{"/y"}}, Cwd: "/x", MCPServers: map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"srv"}`)}, StrictMCPConfig: true, Profile: "work"}},
		{SessionID: "s2", ClaudeSessionID: "c2", Created: at, LastUsed: at},
	}
	if err := r.Save(entries, 0.5, map[string]float64{"alice": 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(entries, 0.5, map[string]float64{"alice": 0.5}); err != nil { // unchanged: no rewrite
		t.Fatal(err)
	}
	got := NewFile(path, nil).Load()
	for _, e := range got { // the file is indented, and so are its raw values
		for k, v := range e.Options.MCPServers {
			var b bytes.Buffer
			_ = json.Compact(&b, v)
			e.Options.MCPServers[k] = b.Bytes()
		}
	}
	if !reflect.DeepEqual(got, entries) {
		t.Errorf("Load = %+v\nwant %+v", got, entries)
	}
	files, _ := os.ReadDir(filepath.Dir(path))
	if len(files) != 1 {
		t.Errorf("state dir holds %d files (temp files left?)", len(files))
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state dir: %v %v", st.Mode(), err)
	}
}

// TestRegistryVersion1 reads a file written before the options had JSON
// names: Go field names, and the MCP servers as an --mcp-config document.
func TestRegistryVersion1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	v1 := `{"version":1,"sessions":[{"sessionId":"s1","claudeSessionId":"c1","resumable":true,"options":{"Cwd":"/x","Model":"sonnet","PermissionMode":"plan","AllowedTools":["Bash"],"MaxTurns":2,"AddDirs":["/y"],"MCPConfig":"{\"mcpServers\":{\"fs\":{\"command\":\"srv\"}}}","StrictMCPConfig":true,"ResumeSessionID":"r","ForkSession":true,"Env":null,"Profile":"work","Temporary":false}}]}`
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	got := NewFile(path, nil).Load()
	want := options.CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash"}, MaxTurns: 2, AddDirs: []string{"/y"}},
		Cwd: "/x", MCPServers: map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"srv"}`)}, StrictMCPConfig: true, ResumeSessionID: "r", ForkSession: true, Profile: "work"}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Options, want) {
		t.Errorf("Load = %+v\nwant options %+v", got, want)
	}
}

func TestRegistryCorrupt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"sessions":[{"sessionId":`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewFile(path, nil)
	if got := r.Load(); len(got) != 0 {
		t.Errorf("Load of a corrupt file = %+v", got)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the corrupt file is still in place: %v", err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved-aside files: %v", aside)
	}
	if b, _ := os.ReadFile(aside[0]); !strings.HasPrefix(string(b), `{"version":1`) {
		t.Errorf("moved-aside content = %q", b)
	}
}

// TestConcurrentUpdates: updates from several Files (as in separate
// processes) at once lose nothing, and leave only the file and its backup.
func TestConcurrentUpdates(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	const writers, writes = 6, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*writes)
	for w := range writers {
		r := NewFile(path, nil) // each its own, as in separate processes
		wg.Go(func() {
			for i := range writes {
				_, err := r.Update(func(f *State, _ time.Time) {
					f.SpentUSD++
					f.Sessions = append(f.Sessions, Entry{SessionID: fmt.Sprintf("w%d-%d", w, i)})
				})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f := readFile(t, path)
	if f.SpentUSD != writers*writes || len(f.Sessions) != writers*writes {
		t.Errorf("after %d concurrent writes: spent %v, %d sessions", writers*writes, f.SpentUSD, len(f.Sessions))
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); !slices.Equal(left, []string{path, path + ".bak"}) {
		t.Errorf("the state directory holds %v, want only the registry and its backup", left)
	}
}

// TestRegistryOnWrite: OnWrite is told of each write with how long it
// took, and of no Update that left the file as it was.
func TestRegistryOnWrite(t *testing.T) {
	t.Parallel()
	r := NewFile(filepath.Join(t.TempDir(), "sessions.json"), nil)
	var took []time.Duration
	r.OnWrite = func(d time.Duration) { took = append(took, d) }
	add := func(f *State, _ time.Time) { f.SpentUSD++ }
	same := func(*State, time.Time) {}
	for _, change := range []func(*State, time.Time){add, same, add, same} {
		if _, err := r.Update(change); err != nil {
			t.Fatal(err)
		}
	}
	if len(took) != 2 {
		t.Fatalf("OnWrite told %d times (%v), want 2: one per write", len(took), took)
	}
	for _, d := range took {
		if d <= 0 {
			t.Errorf("a write took %v, want a positive duration", d)
		}
	}
}
