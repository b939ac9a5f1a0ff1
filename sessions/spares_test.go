package sessions

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// sparePIDs returns the pids of the ready spares.
func sparePIDs(m *Manager) []int {
	var out []int
	for _, sp := range m.spares.Snapshot().Ready {
		out = append(out, sp.Process().PID())
	}
	return out
}

func waitSpares(t *testing.T, m *Manager, n int) []int {
	t.Helper()
	testkit.Until(t, waitLimit, "spares ready", func() bool { return m.Spares() == n })
	return sparePIDs(m)
}

// TestSpareTaken: a create whose options match takes the ready spare (its
// process and Claude session id) and a new spare starts behind it. That
// the create is fast is shown by what it did not do, not by a clock (a
// 100 ms bound can fail under -race on a loaded machine): the session runs
// the spare's process, so the create started none and waited for no
// initialize; the spare behind it starts in the background (Spares.Fill).
func TestSpareTaken(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{WarmSpares: 1, MaxLive: 4})
	cwd := t.TempDir()
	opts := CreateOptions{Cwd: cwd, SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}}
	m.spareOn(live.SessionCreated, opts)
	pids := waitSpares(t, m, 1)
	if m.LiveCount() != 1 {
		t.Errorf("a spare does not count as live: %d", m.LiveCount())
	}
	if n := m.Count(); n != 0 {
		t.Errorf("a spare is listed as a session (%d)", n)
	}
	start := time.Now()
	s := create(t, m, opts)
	t.Logf("create with a spare took %s", time.Since(start))
	in := s.Info()
	if in.PID != pids[0] {
		t.Fatalf("the session runs pid %d, the spare was %d", in.PID, pids[0])
	}
	var pr probe
	if r := query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)}); r.FinalText != hello || r.ClaudeSessionID != in.ClaudeSessionID {
		t.Errorf("query in the spare's process: %+v (claude session %s)", r, in.ClaudeSessionID)
	}
	pr.checkArg(t, "--session-id="+in.ClaudeSessionID, true)
	next := waitSpares(t, m, 1)
	if next[0] == pids[0] || m.LiveCount() != 2 {
		t.Errorf("no new spare behind the taken one: spares %v, live %d", next, m.LiveCount())
	}
}

// TestSpareWantedOnCreate: a create wants warm spares for its options by
// itself (the MCP layer used to ask for them after the create returned):
// a spare for them starts, and the next create with them takes it; a
// temporary session's create wants them too, but starts none until its
// session ends (its collected run closes it).
func TestSpareWantedOnCreate(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{WarmSpares: 1, MaxLive: 4})
	opts := CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}}
	first := create(t, m, opts)
	spare := waitSpares(t, m, 1)[0]
	if second := create(t, m, opts); second.Info().PID != spare || first.Info().PID == spare {
		t.Errorf("the second create runs pid %d, not the spare %d its options' first create asked for", second.Info().PID, spare)
	}

	m = newManager(t, Config{WarmSpares: 1, MaxLive: 4})
	tmp := opts
	tmp.Temporary = true
	s := create(t, m, tmp)
	testkit.Until(t, waitLimit, "the temporary session's options wanted", func() bool { return len(m.spares.Snapshot().Wanted) == 1 })
	if sn := m.spares.Snapshot(); sn.Starting != 0 || len(sn.Ready) != 0 {
		t.Errorf("a temporary session's create started a spare before its turn: %+v", sn)
	}
	r := startRun(t, s, "hi", QueryOptions{})
	waitDone(t, r)
	if _, _, ok := r.Collect(); !ok {
		t.Fatal("no result")
	}
	waitSpares(t, m, 1) // filled once the session ended
}

// TestSpareOnlyForSameOptions: a spare never serves a session whose options
// differ in anything that reaches the CLI. (Each create wants spares for
// its own options, so the spare may be stopped as no longer wanted.)
func TestSpareOnlyForSameOptions(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{WarmSpares: 1, MaxLive: 8, ProfileEnv: func(string) (map[string]string, error) {
		return map[string]string{"PROFILE": "x"}, nil
	}})
	cwd := t.TempDir()
	base := CreateOptions{Cwd: cwd, SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}}
	m.spareOn(live.SessionCreated, base)
	spare := waitSpares(t, m, 1)[0]
	for _, o := range []CreateOptions{
		{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}},
		{Cwd: cwd, SessionOptions: claudeagent.SessionOptions{Model: "opus"}},
		{Cwd: cwd, SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan"}},
		{Cwd: cwd, SessionOptions: claudeagent.SessionOptions{Model: "sonnet", AllowedTools: []string{"Read"}}},
		{Cwd: cwd, SessionOptions: claudeagent.SessionOptions{Model: "sonnet", Effort: "low"}},
		{Cwd: cwd, SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}, Profile: "p"},
		{Cwd: cwd, SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}, Env: map[string]string{"X": "1"}},
	} {
		if s := create(t, m, o); s.Info().PID == spare {
			t.Errorf("a spare of other options served %+v", o)
		}
	}
}

// TestSpareGivesWay: a spare gives its live place to a session at once,
// stops after the idle timeout, and never outlives Shutdown; none with
// --max-live 1.
func TestSpareGivesWay(t *testing.T) {
	t.Parallel()
	t.Run("max_live", func(t *testing.T) {
		t.Parallel()
		// Two option sets: the creates' own (which they want) does not
		// displace the spare's.
		m := newManager(t, Config{WarmSpares: 2, MaxLive: 2})
		m.spareOn(live.SessionCreated, CreateOptions{Cwd: t.TempDir()})
		spare := waitSpares(t, m, 1)[0]
		a := create(t, m, CreateOptions{})
		b := create(t, m, CreateOptions{})
		if a.Info().PID == 0 || b.Info().PID == 0 || m.LiveCount() > 2 {
			t.Errorf("sessions did not get the spare's place: %d, %d, live %d", a.Info().PID, b.Info().PID, m.LiveCount())
		}
		checkGone(t, spare)
		if m.Spares() != 0 {
			t.Errorf("a spare is kept while the live places are taken")
		}
	})
	t.Run("idle_timeout", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{WarmSpares: 1, MaxLive: 2, IdleTimeout: 300 * time.Millisecond})
		m.spareOn(live.SessionCreated, CreateOptions{Cwd: t.TempDir()})
		spare := waitSpares(t, m, 1)[0]
		testkit.Until(t, waitLimit, "the spare stops", func() bool { return m.Spares() == 0 })
		testkit.Until(t, waitLimit, "its place is free", func() bool { return m.LiveCount() == 0 }) // after its process is gone
		checkGone(t, spare)
	})
	t.Run("shutdown", func(t *testing.T) {
		t.Parallel()
		m := NewManager(fakeConfig(t, Config{WarmSpares: 2, MaxLive: 4}))
		m.spareOn(live.SessionCreated, CreateOptions{Cwd: t.TempDir()})
		m.spareOn(live.SessionCreated, CreateOptions{Cwd: t.TempDir()})
		spares := waitSpares(t, m, 2)
		m.Shutdown()
		for _, pid := range spares {
			checkGone(t, pid)
		}
		m.spareOn(live.SessionCreated, CreateOptions{Cwd: t.TempDir()})
		if m.Spares() != 0 || m.LiveCount() != 0 {
			t.Errorf("spares after Shutdown: %d, live %d", m.Spares(), m.LiveCount())
		}
	})
	t.Run("max_live_1", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{WarmSpares: 1, MaxLive: 1})
		m.spareOn(live.SessionCreated, CreateOptions{Cwd: t.TempDir()})
		if m.Spares() != 0 || m.LiveCount() != 0 {
			t.Errorf("a spare with --max-live 1")
		}
	})
}

// TestSpareRefillAfterOneShot: when a one-shot query's temporary session
// takes the spare, the new spare starts only once the query's turn is over,
// so that starting it does not slow the query down; then it does start.
func TestSpareRefillAfterOneShot(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{WarmSpares: 1, MaxLive: 4})
	opts := CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}}
	m.spareOn(live.SessionCreated, opts)
	first := waitSpares(t, m, 1)[0]
	tmp := opts
	tmp.Temporary = true
	s := create(t, m, tmp)
	if s.Info().PID != first {
		t.Fatalf("the one-shot session did not take the spare")
	}
	// The SLOW2 turn streams two chunks 0.5 s apart; at its first text a
	// spare started at the take (the fake CLI starts in milliseconds)
	// would be starting or ready.
	var during []string
	r := query(t, s, "SLOW2", QueryOptions{OnEvent: func(e turn.Event) {
		if e.Kind == turn.EventText && during == nil {
			sn := m.spares.Snapshot()
			during = append(during, fmt.Sprintf("ready %d, starting %d", len(sn.Ready), sn.Starting))
		}
	}})
	if r.IsError {
		t.Fatalf("query: %+v", r)
	}
	if len(during) != 1 || during[0] != "ready 0, starting 0" {
		t.Errorf("spares while the one-shot turn ran: %v, want none", during)
	}
	if next := waitSpares(t, m, 1); next[0] == first {
		t.Errorf("no new spare after the turn: %v", next)
	}
}

// TestSpareRefillWhenFull: with every live place taken, the spare a
// one-shot query took is replaced once its session's process has stopped
// (in the background, after the answer) and freed its place.
func TestSpareRefillWhenFull(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{WarmSpares: 1, MaxLive: 2})
	create(t, m, CreateOptions{}) // other options: it keeps one place
	waitSpares(t, m, 1)           // the spare its create wants, which the next want replaces
	opts := CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}}
	m.spareOn(live.SessionCreated, opts)
	first := waitSpares(t, m, 1)[0]
	tmp := opts
	tmp.Temporary = true
	s := create(t, m, tmp)
	if s.Info().PID != first {
		t.Fatalf("the one-shot session did not take the spare")
	}
	r := startRun(t, s, "hi", QueryOptions{})
	waitDone(t, r)
	if _, _, ok := r.Collect(); !ok {
		t.Fatal("no result")
	}
	if next := waitSpares(t, m, 1); next[0] == first {
		t.Errorf("the spare was not replaced: %v", next)
	}
}

// TestSpareNamed: a named create takes the spare its unnamed options
// started (the name is not part of the spare's key), and the spare's
// process takes the name as --name would have given it: the CLI's
// custom-title line in the transcript.
func TestSpareNamed(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{WarmSpares: 1, MaxLive: 4})
	opts := CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}}
	m.spareOn(live.SessionCreated, opts)
	pids := waitSpares(t, m, 1)
	named := opts
	named.Name = "reviewer"
	s := create(t, m, named)
	if in := s.Info(); in.PID != pids[0] {
		t.Fatalf("the named session runs pid %d, not the spare %d", in.PID, pids[0])
	}
	if r := query(t, s, "hi", QueryOptions{}); r.FinalText != hello {
		t.Fatalf("query: %+v", r)
	}
	title := `"customTitle":"reviewer"`
	testkit.Until(t, waitLimit, "the name in the transcript", func() bool {
		b, err := os.ReadFile(s.TranscriptPath().String())
		return err == nil && strings.Contains(string(b), title)
	})
	// The next named create, with another name, takes the spare behind it.
	next := waitSpares(t, m, 1)
	named.Name = "tester"
	if s2 := create(t, m, named); s2.Info().PID != next[0] {
		t.Errorf("a second named create did not take the spare %d", next[0])
	}
}
