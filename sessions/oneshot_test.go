package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestOneShot: a one-shot query's session lives from OneShot to the
// collect of its result, and its options are wanted for warm spares, which
// are filled once it ends, not while its query runs; a query that cannot
// start (a bad image, a cancelled call, an empty prompt) leaves no session
// and no process behind.
func TestOneShot(t *testing.T) {
	t.Parallel()
	t.Run("answer", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{WarmSpares: 1, MaxLive: 4})
		s, imgs, err := m.OneShot(ctxFor(t), CreateOptions{Cwd: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if in := s.Info(); !in.Temporary || in.PID != 0 {
			t.Errorf("the one-shot session before its query: %+v, want temporary and no process", in)
		}
		sn := m.spares.Snapshot()
		wanted, filling := len(sn.Wanted), sn.Starting+len(sn.Ready)
		if wanted != 1 || filling != 0 {
			t.Errorf("after OneShot: %d option sets wanted, %d spares starting or ready; want 1 and none yet", wanted, filling)
		}
		r := startRun(t, s, "hi", RunOptions{Images: imgs})
		waitDone(t, r)
		if res, err, ok := r.Collect(); !ok || err != nil || res.FinalText != hello {
			t.Fatalf("collect: %+v, %v, %v", res, err, ok)
		}
		if _, err := m.Get(s.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("the one-shot session is still open after its collect: %v", err)
		}
		waitSpares(t, m, 1) // for its options, once it ended
	})
	t.Run("not_started", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		cwd := t.TempDir()
		_, _, err := m.OneShot(ctxFor(t), CreateOptions{Cwd: cwd}, []ImageInput{{Data: "not base64!"}})
		if err == nil || !strings.Contains(err.Error(), "not base64") {
			t.Errorf("OneShot with a bad image: %v", err)
		}
		for _, tc := range []struct {
			name, prompt string
			cancelled    bool
			want         error
		}{
			{"cancelled", "hi", true, context.Canceled},
			{"empty", "", false, ErrEmptyPrompt},
		} {
			s, _, err := m.OneShot(ctxFor(t), CreateOptions{Cwd: cwd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(ctxFor(t))
			if tc.cancelled {
				cancel()
			}
			if _, err := s.StartRun(ctx, tc.prompt, RunOptions{}); !errors.Is(err, tc.want) {
				t.Errorf("%s: Start = %v, want %v", tc.name, err, tc.want)
			}
			cancel()
		}
		if n, live := m.Count(), m.LiveCount(); n != 0 || live != 0 {
			t.Errorf("%d sessions and %d processes left by one-shots that did not start", n, live)
		}
	})
}
