//go:build unix

package sessions

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// A child that hangs (here: SIGSTOP) must not make anything wait longer
// than it says: an interrupt it does not acknowledge within 2 s stops its
// process and says so, and --query-timeout fires within a second of its
// deadline plus those 2 s. The session then resumes on its next query.
func TestHungChild(t *testing.T) {
	t.Parallel()
	stop := func(t *testing.T, pid int) {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP: %v", err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		// The stop takes hold asynchronously: until it has, the child may
		// still answer (an interrupt acknowledged 0.6 ms after the kill
		// made this test fail under load).
		testkit.Until(t, waitLimit, "the child stopped", func() bool { return stopped(pid) })
	}
	resumes := func(t *testing.T, s *Session, old int) {
		t.Helper()
		if got := s.Info(); got.State != state.Dormant || got.PID != 0 {
			t.Errorf("after the stop: state %s pid %d, want dormant", got.State, got.PID)
		}
		checkGone(t, old)
		var pr probe
		if r := query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)}); r.FinalText != hello {
			t.Errorf("the next query: %+v", r)
		}
		pr.checkArg(t, "--resume="+s.Info().ClaudeSessionID, true)
	}
	t.Run("interrupt", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		pid := s.Info().PID
		p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
		p.waitStarted(t)
		stop(t, pid)
		start := time.Now()
		running, forced := s.Interrupt(ctxFor(t))
		if d := time.Since(start); !running || !forced || d > 3*time.Second {
			t.Errorf("Interrupt of a stopped child = running %v, forced %v after %s; want both within 3 s", running, forced, d)
		}
		r := p.wait(t, 5*time.Second)
		if !r.Interrupted || !r.IsError || !strings.Contains(r.ErrorText, "did not acknowledge the interrupt within 2s") {
			t.Errorf("the interrupted query: %+v", r)
		}
		resumes(t, s, pid)
	})
	t.Run("query_waits", func(t *testing.T) {
		// A query that arrives while the running turn is being interrupted
		// waits for that turn's end (here: the stop of the hung process,
		// after the 2 s the interrupt's acknowledgement may take) and then
		// runs — a host such as Claude Code sends its next call without
		// waiting for the cancel's answer. Beside a turn that runs
		// normally it is refused at once.
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		pid := s.Info().PID
		p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
		p.waitStarted(t)
		if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBusy) {
			t.Fatalf("a query beside a running turn: %v, want ErrBusy", err)
		}
		stop(t, pid)
		go s.Interrupt(ctxFor(t))
		testkit.Until(t, waitLimit, "the interrupt under way", func() bool { return stateOf(s) == state.Interrupting })
		r, err := s.Query(ctxFor(t), "hi", QueryOptions{})
		if err != nil || r.FinalText != hello {
			t.Fatalf("the query during the interrupt: %+v, %v", r, err)
		}
		if r := p.wait(t, 5*time.Second); !r.Interrupted {
			t.Errorf("the first query was not interrupted: %+v", r)
		}
	})
	t.Run("query_timeout", func(t *testing.T) {
		t.Parallel()
		const timeout = time.Second
		m := newManager(t, Config{QueryTimeout: timeout})
		s := create(t, m, CreateOptions{})
		pid := s.Info().PID
		p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
		p.waitStarted(t)
		stop(t, pid)
		r := p.wait(t, 10*time.Second)
		if limit := timeout + 2*time.Second + time.Second; p.dur > limit {
			t.Errorf("the timed-out query returned after %s, want at most %s", p.dur, limit)
		}
		if !r.TimedOut || !r.IsError || !strings.Contains(r.ErrorText, "the query timed out, and claude did not acknowledge") {
			t.Errorf("the timed-out query: %+v", r)
		}
		resumes(t, s, pid)
	})
}

// stopped reports whether process pid is stopped by a signal: its state
// in /proc (Linux), or as ps(1) shows it elsewhere.
func stopped(pid int) bool {
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// pid (comm) state ...: comm may hold spaces and parentheses.
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 && i+2 < len(data) {
			return data[i+2] == 'T'
		}
		return false
	}
	out, err := exec.Command("ps", "-o", "state=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "T")
}
