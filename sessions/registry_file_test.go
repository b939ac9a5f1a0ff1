package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects a logger's lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// TestRegistryBackup: every write keeps the previous file as <path>.bak; a
// registry that does not parse is moved aside and the backup restored in
// its place, with an error in the log.
func TestRegistryBackup(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	var log logBuffer
	r := NewRegistry(path, log.logger())
	first := []RegistryEntry{{SessionID: "s1", ClaudeSessionID: "c1"}}
	second := append(slices.Clone(first), RegistryEntry{SessionID: "s2", ClaudeSessionID: "c2"})
	for _, entries := range [][]RegistryEntry{first, second} {
		if err := r.Save(entries, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(es []RegistryEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.SessionID)
		}
		return out
	}
	if got := ids(NewRegistry(path+".bak", nil).Load()); !slices.Equal(got, []string{"s1"}) {
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
	if got := ids(NewRegistry(path, nil).Load()); !slices.Equal(got, []string{"s1"}) {
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
	var log logBuffer
	r := NewRegistry(path, log.logger())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := r.Load()
	err = r.Save([]RegistryEntry{{SessionID: "s1"}}, 0, nil)
	runtime.ReadMemStats(&after)
	if len(got) != 0 {
		t.Errorf("Load = %v", got)
	}
	want := fmt.Sprintf("%s is %d bytes, over the 64 MiB", path, size)
	if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), want) {
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
	if got := registryIDs(path); !slices.Equal(got, []string{"s1"}) {
		t.Errorf("Load = %v, want [s1]", got)
	}
	if err := NewRegistry(path, nil).Save([]RegistryEntry{{SessionID: "s1"}, {SessionID: "s2"}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	f := readRegistry(t, path)
	if f.Version != registryVersion || !f.Closed["gone"].Closed.Equal(closed) {
		t.Errorf("after a write: version %d, tombstones %+v", f.Version, f.Closed)
	}
}

// TestRegistryTombstonesBounded: a long create/close loop keeps the file
// small: tombstones past the count are dropped, oldest first, and so are
// those older than tombstoneAge, so that the file (which every write reads
// and writes whole) stops growing.
func TestRegistryTombstonesBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	r := NewRegistry(path, nil)
	r.maxTombstones = 40
	m := newManager(t, Config{Registry: r})
	cwd := t.TempDir()
	cycle := func() {
		s, err := m.Open(ctxFor(t), CreateOptions{Cwd: cwd, Owner: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		m.persist()
		if _, err := m.Close(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	var sizes []int64
	for i := range 240 {
		cycle()
		if i%40 == 39 {
			sizes = append(sizes, size())
		}
	}
	f := readRegistry(t, path)
	if len(f.Closed) != 40 || f.ClosedHorizon.IsZero() {
		t.Errorf("after 240 closes: %d tombstones, horizon %v; want 40 and a horizon", len(f.Closed), f.ClosedHorizon)
	}
	for _, s := range sizes[1:] {
		if s > sizes[0]+64 { // the same records, give or take a digit
			t.Errorf("the registry grows with the closes: %v bytes every 40 cycles", sizes)
			break
		}
	}
	// Tombstones older than tombstoneAge go at the next write.
	if _, err := r.update(func(f *registryFile, now time.Time) {
		for id, tomb := range f.Closed {
			tomb.Closed = now.Add(-tombstoneAge - time.Minute)
			f.Closed[id] = tomb
			break
		}
	}); err != nil {
		t.Fatal(err)
	}
	cycle()
	if n := len(readRegistry(t, path).Closed); n != 40 {
		t.Errorf("%d tombstones, want 40 (the expired one gone, the new one in)", n)
	}
}

// BenchmarkRegistryCreateClose runs create/close cycles through the
// manager (no process: Open, a merge, Close, a merge) with the default
// tombstone cap. Run with -benchtime=5000x: the file stops growing once
// the cap is reached (cycle 2048), and the time per cycle of the last 500
// cycles ("last-µs/cycle") stays that of the 500 cycles after the cap was
// reached ("at-cap-µs/cycle"); "first-µs/cycle" is of the first 500.
func BenchmarkRegistryCreateClose(b *testing.B) {
	path := filepath.Join(b.TempDir(), "sessions.json")
	m := newManager(b, Config{Registry: NewRegistry(path, nil)})
	cwd := b.TempDir()
	ctx := ctxFor(b)
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		s, err := m.Open(ctx, CreateOptions{Cwd: cwd, Owner: "alice"})
		if err != nil {
			b.Fatal(err)
		}
		m.persist()
		if _, err := m.Close(s.ID); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size()), "file-bytes")
	b.ReportMetric(float64(len(readRegistry(b, path).Closed)), "tombstones")
	avg := func(from, to int) float64 {
		var sum time.Duration
		for _, d := range times[from:to] {
			sum += d
		}
		return float64(sum.Microseconds()) / float64(to-from)
	}
	const window = 500
	b.ReportMetric(avg(0, min(window, len(times))), "first-µs/cycle")
	if len(times) >= maxTombstones+2*window {
		b.ReportMetric(avg(maxTombstones, maxTombstones+window), "at-cap-µs/cycle")
		b.ReportMetric(avg(len(times)-window, len(times)), "last-µs/cycle")
	}
}

// TestTombstoneCodec: the tombstones' own encoder and scanner agree with
// encoding/json: what the encoder writes reads back the same, by the scan
// when nothing needs escaping and by encoding/json otherwise.
func TestTombstoneCodec(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 15, 7, 1, 123456789, time.UTC)
	for name, tc := range map[string]struct {
		m       tombstoneMap
		scanned bool
	}{
		"plain": {tombstoneMap{
			"s1": {Closed: at, Owner: "alice", ClaudeSessionIDs: []string{"c1", "c2"}},
			"s2": {Closed: at.Add(time.Second)},
			"s3": {Owner: "bob"},
		}, true},
		"empty":   {tombstoneMap{}, true},
		"escaped": {tombstoneMap{"s1": {Closed: at, Owner: "a\"b\\c é\n", ClaudeSessionIDs: []string{"<c1>"}}}, false},
	} {
		data, err := json.Marshal(tc.m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !json.Valid(data) {
			t.Fatalf("%s: invalid JSON %s", name, data)
		}
		var plain map[string]tombstone
		if err := json.Unmarshal(data, &plain); err != nil {
			t.Fatalf("%s: encoding/json reads %s: %v", name, data, err)
		}
		var got tombstoneMap
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := scanTombstones(data); ok != tc.scanned {
			t.Errorf("%s: scanned %v, want %v: %s", name, ok, tc.scanned, data)
		}
		for _, m := range []map[string]tombstone{plain, got} {
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
