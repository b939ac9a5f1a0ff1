package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// sparesAtText records the warm spares at a run's first text.
type sparesAtText struct {
	m    *Manager
	seen chan string
}

func (l *sparesAtText) OnEvent(e turn.Event) {
	if e.Kind != turn.EventText {
		return
	}
	sn := l.m.spares.Snapshot()
	select {
	case l.seen <- fmt.Sprintf("%d wanted, %d starting, %d ready", len(sn.Wanted), sn.Starting, len(sn.Ready)):
	default: // the first text only
	}
}

// TestOneShot: a session OneShot opens for a call's query — temporary (a
// direct query: it lives to the collect of its result) or kept (an agent
// tool's) — has its options wanted for warm spares, which are filled when
// its turn ends, not while the query runs, although the call that started
// it has returned (StartRun returns at the turn's start), and so is the
// spare it took, when one was ready; a query that
// cannot start (a bad image, a cancelled call, an empty prompt) leaves no
// session and no process behind.
func TestOneShot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ temporary, spare bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		temporary := tc.temporary
		t.Run(fmt.Sprintf("temporary_%v_spare_%v", temporary, tc.spare), func(t *testing.T) {
			t.Parallel()
			m := newManager(t, Config{WarmSpares: 1, MaxLive: 4})
			opts := CreateOptions{Cwd: t.TempDir()}
			var first int
			if tc.spare {
				m.spareOn(live.SessionCreated, opts)
				first = waitSpares(t, m, 1)[0]
			}
			opts.Temporary = temporary
			s, imgs, err := m.OneShot(ctxFor(t), opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if in := s.Info(); in.Temporary != temporary || in.PID != 0 {
				t.Errorf("the session before its query: %+v, want temporary %v and no process", in, temporary)
			}
			// SLOW2 streams two chunks 0.5 s apart: a spare started
			// before the turn's end (the fake CLI starts in milliseconds)
			// would be starting or ready at its first text.
			l := &sparesAtText{m: m, seen: make(chan string, 1)}
			r := startRun(t, s, "SLOW2", QueryOptions{Images: imgs, Listener: l})
			waitDone(t, r)
			if got, want := <-l.seen, "1 wanted, 0 starting, 0 ready"; got != want {
				t.Errorf("spares while the turn ran: %s, want %s", got, want)
			}
			if pid := s.Info().PID; tc.spare && !temporary && pid != first {
				t.Errorf("the session runs pid %d, not the spare's %d", pid, first)
			}
			if res, err, ok := r.Collect(); !ok || err != nil || res.IsError {
				t.Fatalf("collect: %+v, %v, %v", res, err, ok)
			}
			if _, err := m.Get(s.ID); temporary != errors.Is(err, ErrNotFound) {
				t.Errorf("the session after its collect: %v, want it gone: %v", err, temporary)
			}
			if next := waitSpares(t, m, 1); next[0] == first { // for its options, once the turn (or the session) ended
				t.Errorf("no new spare after the turn: %v", next)
			}
		})
	}
	t.Run("not_started", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		cwd := t.TempDir()
		for _, temporary := range []bool{true, false} {
			_, _, err := m.OneShot(ctxFor(t), CreateOptions{Cwd: cwd, Temporary: temporary}, []images.Input{{Data: "not base64!"}})
			if err == nil || !strings.Contains(err.Error(), "not base64") {
				t.Errorf("OneShot (temporary %v) with a bad image: %v", temporary, err)
			}
		}
		for _, tc := range []struct {
			name, prompt string
			cancelled    bool
			want         error
		}{
			{"cancelled", "hi", true, context.Canceled},
			{"empty", " ", false, ErrEmptyPrompt},
		} {
			s, _, err := m.OneShot(ctxFor(t), CreateOptions{Cwd: cwd, Temporary: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(ctxFor(t))
			if tc.cancelled {
				cancel()
			}
			if _, err := s.StartRun(ctx, tc.prompt, QueryOptions{}); !errors.Is(err, tc.want) {
				t.Errorf("%s: Start = %v, want %v", tc.name, err, tc.want)
			}
			cancel()
		}
		if n, live := m.Count(), m.LiveCount(); n != 0 || live != 0 {
			t.Errorf("%d sessions and %d processes left by one-shots that did not start", n, live)
		}
	})
}
