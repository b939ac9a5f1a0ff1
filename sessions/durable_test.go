//go:build unix

package sessions

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// lazyTranscript is a CLI that writes its transcript long after a turn
// (2.1.197 does up to about two seconds after).
const lazyTranscript = "1h"

// TestTakeoverBeforeTranscript: instance A answers a turn and dies before
// its CLI writes the turn into its transcript; instance B, with a CLI
// config directory of its own, takes the session over once A's lease has
// lapsed: no transcript holds the turn, so B replays the session's stored
// history (written before A's answer went out) into a fresh conversation,
// whose first prompt carries what was said, and B's history is whole
// (issue 44: the resume failed with "No conversation found" in 4 of 4
// runs and the session stayed failed with an empty history).
func TestTakeoverBeforeTranscript(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, open backend) {
		input := filepath.Join(t.TempDir(), "input.jsonl")
		a := newManager(t, Config{Store: open(t), Env: map[string]string{"CLAUDE_CONFIG_DIR": t.TempDir()}}, fakecli.EnvTranscriptLag, lazyTranscript)
		s := create(t, a, CreateOptions{})
		if r := query(t, s, "remember the word PELICAN", QueryOptions{}); r.IsError {
			t.Fatal(r.ErrorText)
		}
		// A dies: its lease lapses without a release, its CLI ends without
		// writing the transcript.
		pid := s.Info().PID
		execSQL(t, open(t), `UPDATE leases SET holder = 'gone', expires = ? WHERE id = ?`, time.Now().Add(-time.Second).UnixNano(), s.ID)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		b := newManager(t, Config{Store: open(t), Env: map[string]string{"CLAUDE_CONFIG_DIR": t.TempDir()}}, fakecli.EnvInputLog, input)
		bs, err := b.Get(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		r := query(t, bs, "which word did I ask you to remember?", QueryOptions{})
		if r.IsError || r.Recovered != "replayed" {
			t.Errorf("B's query: error %q, recovered %q; want a replay", r.ErrorText, r.Recovered)
		}
		if in := readInputLog(t, input); !strings.Contains(in, "remember the word PELICAN") {
			t.Errorf("B's first prompt does not carry the conversation:\n%s", in)
		}
		kinds, texts := steps(bs)
		if len(texts) < 4 || texts[0] != "remember the word PELICAN" || kinds[0] != "prompt" {
			t.Errorf("B's history: %q %q, want A's turn first", kinds, texts)
		}
	})
}

// TestResumeBeforeTranscript: on one instance, a session whose CLI was
// killed right after a turn, before it wrote the turn into its transcript,
// goes on by replaying its history (issue 44: once in 15 runs it came back
// with "No conversation found"), also once it has left memory and is read
// back from the store.
func TestResumeBeforeTranscript(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	input := filepath.Join(t.TempDir(), "input.jsonl")
	m := newManager(t, Config{Store: storeAt(t, path), Env: map[string]string{"CLAUDE_CONFIG_DIR": t.TempDir()}},
		fakecli.EnvTranscriptLag, lazyTranscript, fakecli.EnvInputLog, input)
	s := create(t, m, CreateOptions{})
	query(t, s, "remember the word HERON", QueryOptions{})
	pid := s.Info().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the session dormant after its CLI died", func() bool { return stateOf(s) == state.Dormant })
	s, err := m.Get(s.ID) // it may have left memory
	if err != nil {
		t.Fatal(err)
	}
	r := query(t, s, "which word?", QueryOptions{})
	if r.IsError || r.Recovered != "replayed" {
		t.Errorf("the query after the CLI died: error %q, recovered %q; want a replay", r.ErrorText, r.Recovered)
	}
	if in := readInputLog(t, input); strings.Count(in, "remember the word HERON") < 2 {
		t.Errorf("the replayed prompt does not carry the conversation:\n%s", in)
	}
}

// TestTranscriptFollowed: a transcript the CLI writes after the turn's
// answer is stored as it comes, until it holds the turn; another instance
// then resumes it instead of replaying.
func TestTranscriptFollowed(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, open backend) {
		a := newManager(t, Config{Store: open(t), Env: map[string]string{"CLAUDE_CONFIG_DIR": t.TempDir()}}, fakecli.EnvTranscriptLag, "300ms")
		s := create(t, a, CreateOptions{})
		query(t, s, "remember the word EGRET", QueryOptions{})
		st := open(t)
		testkit.Until(t, 10*time.Second, "the stored transcript to hold the turn", func() bool {
			data, err := st.ReadTranscript(ctxFor(t), s.ID, s.Info().ClaudeSessionID)
			s.mu.Lock()
			mark := s.lastMessage
			s.mu.Unlock()
			return err == nil && mark != "" && strings.Contains(string(data), mark)
		})
		execSQL(t, st, `UPDATE leases SET holder = 'gone', expires = ? WHERE id = ?`, time.Now().Add(-time.Second).UnixNano(), s.ID)
		_ = syscall.Kill(s.Info().PID, syscall.SIGKILL)
		b := newManager(t, Config{Store: open(t), Env: map[string]string{"CLAUDE_CONFIG_DIR": t.TempDir()}})
		bs, err := b.Get(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		var pr probe
		r := query(t, bs, "which word?", QueryOptions{OnEvent: pr.onEvent(bs)})
		if r.IsError || r.Recovered != "" {
			t.Errorf("B's query: error %q, recovered %q; want a resume", r.ErrorText, r.Recovered)
		}
		pr.checkArg(t, "--resume="+s.Info().ClaudeSessionID, true)
	})
}
