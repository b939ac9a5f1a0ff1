package sessions

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// Rewinding a session's files against the fake CLI, whose turns stand for
// one new file each (/CWD/turn<n>.txt, see fakecli): prompt N is the N-th
// prompt of the history, known to the CLI by the uuid it was sent with.

// sentUUIDs are the uuids of the user messages in the fake's input log,
// in order.
func sentUUIDs(t *testing.T, log string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(readInputLog(t, log), "\n") {
		var m struct {
			Type string `json:"type"`
			UUID string `json:"uuid"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Type == "user" {
			out = append(out, m.UUID)
		}
	}
	return out
}

// rewindIDs are the user_message_id of the rewind_files requests in the
// fake's input log, in order.
func rewindIDs(t *testing.T, log string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(readInputLog(t, log), "\n") {
		var m struct {
			Request struct {
				Subtype string `json:"subtype"`
				ID      string `json:"user_message_id"`
			} `json:"request"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Request.Subtype == "rewind_files" {
			out = append(out, m.Request.ID)
		}
	}
	return out
}

func TestRewind(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "in.log")
	m := newManager(t, Config{FileCheckpoints: true}, fakecli.EnvInputLog, log)
	s := create(t, m, CreateOptions{})
	cwd := s.Info().Cwd
	if _, err := s.Rewind(ctxFor(t), 1, true); err == nil || !strings.Contains(err.Error(), "no prompts yet") {
		t.Errorf("a rewind of a session without prompts: %v", err)
	}
	for range 3 {
		query(t, s, "hi", QueryOptions{})
	}
	prompts := s.Prompts()
	if sent := sentUUIDs(t, log); len(prompts) != 3 || len(sent) != 3 ||
		!slices.Equal([]string{prompts[0].ID, prompts[1].ID, prompts[2].ID}, sent) {
		t.Fatalf("the prompts' ids %+v are not the uuids they were sent with %v", prompts, sent)
	}
	file := func(n string) string { return filepath.Join(cwd, "turn"+n+".txt") }
	r, err := s.Rewind(ctxFor(t), 2, true)
	if err != nil || !r.DryRun || r.Prompt != 2 || !slices.Equal(r.Files, []string{file("2"), file("3")}) || r.Deletions != 2 {
		t.Fatalf("dry run to before prompt 2 = %+v, %v", r, err)
	}
	if ids := rewindIDs(t, log); len(ids) != 1 || ids[0] != prompts[1].ID {
		t.Errorf("the dry run asked for %v, want prompt 2's uuid %s", ids, prompts[1].ID)
	}
	r, err = s.Rewind(ctxFor(t), 3, false)
	if err != nil || r.DryRun || !slices.Equal(r.Files, []string{file("3")}) {
		t.Fatalf("rewind to before prompt 3 = %+v, %v", r, err)
	}
	if r, err := s.Rewind(ctxFor(t), 1, true); err != nil || !slices.Equal(r.Files, []string{file("1"), file("2")}) {
		t.Errorf("dry run after the rewind = %+v, %v; want prompt 3's file taken back", r, err)
	}
	for _, n := range []int{0, 4, -1} {
		if _, err := s.Rewind(ctxFor(t), n, true); err == nil || !strings.Contains(err.Error(), "prompts 1 to 3") {
			t.Errorf("prompt %d: %v, want the range", n, err)
		}
	}
	if st := stateOf(s); st != state.Idle {
		t.Errorf("after the rewinds the session is %s", st)
	}
	// The session queries on.
	if r := query(t, s, "hi", QueryOptions{}); r.IsError {
		t.Errorf("a query after the rewinds: %+v", r)
	}
}

// TestRewindDormant: a dormant session resumes for a rewind, and the
// resumed CLI knows the checkpoints (from its transcript).
func TestRewindDormant(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{FileCheckpoints: true})
	s := create(t, m, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	query(t, s, "hi", QueryOptions{})
	if !s.makeDormant("test") {
		t.Fatal("the session did not go dormant")
	}
	r, err := s.Rewind(ctxFor(t), 1, true)
	if err != nil || len(r.Files) != 2 {
		t.Fatalf("dry run of a dormant session = %+v, %v", r, err)
	}
	if st := stateOf(s); st != state.Idle || s.Info().PID == 0 {
		t.Errorf("after the rewind the session is %s (pid %d), want idle with its process", st, s.Info().PID)
	}
}

func TestRewindRefused(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{FileCheckpoints: true})
	s := create(t, m, CreateOptions{})
	query(t, s, "hi", QueryOptions{})

	// A running turn: busy.
	q := startQuery(ctxFor(t), s, "SLOW4", QueryOptions{})
	q.waitStarted(t)
	if _, err := s.Rewind(ctxFor(t), 1, true); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), s.ID) {
		t.Errorf("a rewind during a turn: %v, want ErrBusy", err)
	}
	select {
	case <-q.done:
		t.Fatal("the turn had ended before the rewind; the test proves nothing")
	default:
	}
	q.wait(t, waitLimit)

	// A prompt recorded without its id (by an older server).
	s.mu.Lock()
	s.addHistoryLocked(history.Entry{Kind: "prompt", Text: "old"})
	s.mu.Unlock()
	if _, err := s.Rewind(ctxFor(t), len(s.Prompts()), true); err == nil || !strings.Contains(err.Error(), "without the id") {
		t.Errorf("a prompt without its id: %v", err)
	}

	// Closed.
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rewind(ctxFor(t), 1, true); !errors.Is(err, ErrClosed) {
		t.Errorf("a rewind of a closed session: %v, want ErrClosed", err)
	}

	// Without checkpoints: the flag is named.
	m2 := newManager(t, Config{})
	s2 := create(t, m2, CreateOptions{})
	query(t, s2, "hi", QueryOptions{})
	if _, err := s2.Rewind(ctxFor(t), 1, true); !errors.Is(err, ErrNoCheckpoints) || !strings.Contains(err.Error(), "--file-checkpoints") {
		t.Errorf("a rewind without checkpoints: %v", err)
	}
}

// TestRewindNoCheckpoint: a prompt the CLI has no checkpoint of (sent
// while the server ran without them) is refused in words that say why.
func TestRewindNoCheckpoint(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{FileCheckpoints: true})
	s := create(t, m, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	s.mu.Lock()
	s.addHistoryLocked(history.Entry{Kind: "prompt", Text: "unknown to the CLI", ID: "00000000-0000-4000-8000-0000000000ee"})
	s.mu.Unlock()
	for _, dry := range []bool{true, false} {
		if _, err := s.Rewind(ctxFor(t), 2, dry); err == nil || !strings.Contains(err.Error(), "has no file checkpoint") {
			t.Errorf("dry run %v to a prompt without a checkpoint: %v", dry, err)
		}
	}
}
