package sessions

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The usage_limit capture (the fake CLI's LIMIT[…]): 2.1.197 refused by a
// subscription's 5-hour limit, which resets at limitReset; usage_warning
// (LIMITWARN): a warning, 90% used, reset at warnReset.
var (
	limitReset = time.Unix(1795621502, 0)
	warnReset  = time.Unix(1795624502, 0)
)

const limitPrompt = "LIMIT[600] hi"

// limitManager runs the fake CLI, logging what it reads, on a clock that
// says it is ahead before limitReset, and goes on at the reset itself.
func limitManager(t *testing.T, cfg Config, ahead time.Duration) (*Manager, *testClock, string) {
	t.Helper()
	clk := &testClock{}
	clk.advance(time.Until(limitReset) - ahead)
	cfg.now, cfg.limitMarginSet = clk.now, true
	log := filepath.Join(t.TempDir(), "in.log")
	return newManager(t, cfg, fakecli.EnvInputLog, log), clk, log
}

// sentTexts are the texts of the user messages the fake CLI read.
func sentTexts(t *testing.T, log string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(readInputLog(t, log), "\n") {
		var m struct {
			Type    string
			Message struct{ Content json.RawMessage }
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.Type != "user" {
			continue
		}
		var text string
		if json.Unmarshal(m.Message.Content, &text) != nil {
			text = string(m.Message.Content)
		}
		out = append(out, text)
	}
	return out
}

// TestUsageLimitWaitsAndGoesOn: a turn refused by the usage limit parks
// its query — the session shows the reset, the query's events say so —
// and at the reset the query goes on by itself with a continuation (the
// CLI keeps the prompt: it is not sent again), and returns the answer as
// if nothing had happened.
func TestUsageLimitWaitsAndGoesOn(t *testing.T) {
	t.Parallel()
	// 2 s before the reset: the session's create and first turn must come
	// before it, also on a loaded machine, for the Info of a parked query.
	m, clk, log := limitManager(t, Config{}, 2*time.Second)
	s := create(t, m, CreateOptions{})
	var parked Info
	var limited []turn.Event
	r := query(t, s, limitPrompt, QueryOptions{OnEvent: func(e turn.Event) {
		if e.Kind == turn.EventLimited {
			limited = append(limited, e)
			parked = s.Info()
		}
	}})
	if r.IsError || r.FinalText != hello || !r.LimitedUntil.IsZero() || r.Interrupted {
		t.Fatalf("result = %+v, want the answer after the reset", r)
	}
	if len(limited) != 1 || !limited[0].Until.Equal(limitReset) || !strings.Contains(limited[0].Text, "limited until "+limitReset.UTC().Format(time.RFC3339)) {
		t.Errorf("limited events %+v, want one with the reset %s", limited, limitReset)
	}
	if !parked.LimitedUntil.Equal(limitReset) || parked.State != state.Running || parked.LimitKind != "five_hour" {
		t.Errorf("Info while parked = %+v, want running, limited until %s", parked, limitReset)
	}
	if !clk.now().After(limitReset) {
		t.Errorf("the query went on at %s, before the reset %s", clk.now(), limitReset)
	}
	if got := sentTexts(t, log); len(got) != 2 || got[0] != limitPrompt || got[1] != Continuation {
		t.Errorf("the CLI read %q, want the prompt once, then the continuation", got)
	}
	// The prompt's file checkpoint is its own message's, not the continuation's.
	if ps, ids := s.Prompts(), sentUUIDs(t, log); len(ps) != 1 || len(ids) != 2 || ps[0].ID != ids[0] || ids[0] == ids[1] {
		t.Errorf("the prompt's recorded id %+v, want the first of the sent uuids %v", ps, ids)
	}
	if !approx(r.CostUSD, plainCost) || r.Usage != (turn.Usage{InputTokens: 10, OutputTokens: 9}) || r.NumTurns != 2 {
		t.Errorf("cost %v, usage %+v, turns %d: want both turns' (the refused one cost nothing)", r.CostUSD, r.Usage, r.NumTurns)
	}
	in := s.Info()
	if !in.LimitedUntil.IsZero() || in.Queries != 1 || in.State != state.Idle {
		t.Errorf("Info after = %+v", in)
	}
}

// TestUsageLimitFail: with OnFail the query ends at once with the
// limit; the session shows it; the next query is held back unsent while
// it lasts (failing at once too, or waiting — and then interrupted, or
// cancelled — without sending); at the reset a waiting one is sent, once.
func TestUsageLimitFail(t *testing.T) {
	t.Parallel()
	m, clk, log := limitManager(t, Config{}, time.Hour)
	s := create(t, m, CreateOptions{})
	r := query(t, s, limitPrompt, QueryOptions{OnLimit: OnFail})
	if !r.IsError || !r.LimitedUntil.Equal(limitReset) || r.LimitKind != "five_hour" ||
		!strings.Contains(r.ErrorText, "limited until "+limitReset.UTC().Format(time.RFC3339)+" (in ") ||
		!strings.Contains(r.ErrorText, "onUsageLimit fail") || !strings.Contains(r.ErrorText, "the session's next query continues") ||
		!strings.Contains(r.ErrorText, "You've hit your session limit") {
		t.Errorf("result = %+v", r)
	}
	// The test's clock goes on with the real one: the hour left is the
	// hour less what the query took, whole seconds.
	if m := regexp.MustCompile(`\(in ([0-9hms]+), the 5-hour limit\)`).FindStringSubmatch(r.ErrorText); m == nil {
		t.Errorf("no time left in %q", r.ErrorText)
	} else if d, err := time.ParseDuration(m[1]); err != nil || d > time.Hour || d < time.Hour-waitLimit || d%time.Second != 0 {
		t.Errorf("time left %q, want the hour less what the query took, in whole seconds", m[1])
	}
	if in := s.Info(); !in.LimitedUntil.Equal(limitReset) || in.State != state.Idle {
		t.Errorf("Info = %+v, want idle, limited until %s", in, limitReset)
	}

	r = query(t, s, "second", QueryOptions{OnLimit: OnFail})
	if !r.IsError || !r.LimitedUntil.Equal(limitReset) || !strings.Contains(r.ErrorText, "the prompt was not sent") {
		t.Errorf("held back, failing: %+v", r)
	}

	// Waiting: interrupted, then cancelled, while the reset is an hour away.
	for _, stop := range []string{"interrupted", "cancelled"} {
		ctx, cancel := context.WithCancel(ctxFor(t))
		p := startQuery(ctx, s, "third", QueryOptions{OnEvent: func(e turn.Event) {
			if e.Kind != turn.EventLimited {
				return
			}
			if stop == "cancelled" {
				cancel()
			} else if running, forced := s.Interrupt(context.Background()); !running || forced {
				t.Errorf("Interrupt of a held-back query: running %v, forced %v", running, forced)
			}
		}})
		r = p.wait(t, waitLimit)
		cancel()
		if !r.IsError || !r.Interrupted || !strings.Contains(r.ErrorText, "was "+stop+" while it waited") ||
			!strings.Contains(r.ErrorText, "the prompt was not sent") || p.dur > 10*time.Second {
			t.Errorf("%s while held back: %+v after %s", stop, r, p.dur)
		}
	}
	if got := sentTexts(t, log); len(got) != 1 {
		t.Errorf("the CLI read %q, want the first prompt alone", got)
	}

	// A moment before the reset: the next query waits for it, then sends
	// its prompt, once (no continuation: the CLI's turn ended).
	clk.advance(time.Hour - 200*time.Millisecond)
	r = query(t, s, "fourth", QueryOptions{})
	if r.IsError || r.FinalText != hello {
		t.Errorf("after the reset: %+v", r)
	}
	if got := sentTexts(t, log); len(got) != 2 || got[1] != "fourth" {
		t.Errorf("the CLI read %q, want the first prompt, then the fourth", got)
	}
	if in := s.Info(); !in.LimitedUntil.IsZero() {
		t.Errorf("still limited after a turn that went through: %+v", in)
	}
}

// TestUsageLimitTooFar: a reset beyond the query's timeout or the longest
// wait the server allows ends the query at once; so does a server that
// never waits.
func TestUsageLimitTooFar(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"query timeout", Config{QueryTimeout: time.Minute}, "beyond its timeout (--query-timeout 1m0s)"},
		{"max wait", Config{MaxLimitWait: 30 * time.Minute}, "(--max-limit-wait 30m0s)"},
		{"never", Config{MaxLimitWait: -1}, "(--max-limit-wait 0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := limitManager(t, tc.cfg, time.Hour)
			s := create(t, m, CreateOptions{})
			start := time.Now()
			r := query(t, s, limitPrompt, QueryOptions{})
			if !r.IsError || !r.LimitedUntil.Equal(limitReset) || !strings.Contains(r.ErrorText, tc.want) || time.Since(start) > 10*time.Second {
				t.Errorf("result = %+v", r)
			}
		})
	}
}

// TestUsageLimitInterrupt: a query parked after its turn is interrupted,
// cancelled, or its session closed: it ends at once with the limit, and
// nothing more goes to the CLI.
func TestUsageLimitInterrupt(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"interrupt", "cancel", "close"} {
		t.Run(how, func(t *testing.T) {
			m, _, log := limitManager(t, Config{}, time.Hour)
			s := create(t, m, CreateOptions{})
			ctx, cancel := context.WithCancel(ctxFor(t))
			defer cancel()
			closed := make(chan struct{})
			p := startQuery(ctx, s, limitPrompt, QueryOptions{OnEvent: func(e turn.Event) {
				if e.Kind != turn.EventLimited {
					return
				}
				switch how {
				case "interrupt":
					if running, forced := s.Interrupt(context.Background()); !running || forced {
						t.Errorf("Interrupt: running %v, forced %v", running, forced)
					}
				case "cancel":
					cancel()
				case "close":
					go func() { _, _ = m.Close(s.ID); close(closed) }()
				}
			}})
			r := p.wait(t, waitLimit)
			if !r.IsError || !r.Interrupted || !r.LimitedUntil.Equal(limitReset) || !strings.Contains(r.ErrorText, "while it waited") {
				t.Errorf("result = %+v", r)
			}
			if got := sentTexts(t, log); len(got) != 1 {
				t.Errorf("the CLI read %q, want the prompt alone", got)
			}
			if how == "close" {
				select {
				case <-closed: // its process is gone
				case <-time.After(waitLimit):
					t.Fatal("the session's close did not return")
				}
				return
			}
			if st := stateOf(s); st != state.Idle {
				t.Errorf("state after = %s, want idle", st)
			}
		})
	}
}

// TestUsageLimitRun: a run whose query waits for a reset has started as
// far as Start is concerned; its progress shows the reset, and Cancel ends
// the wait.
func TestUsageLimitRun(t *testing.T) {
	t.Parallel()
	m, _, _ := limitManager(t, Config{}, time.Hour)
	s := create(t, m, CreateOptions{})
	r, err := s.StartRun(ctxFor(t), limitPrompt, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, waitLimit, "the run to show the reset", func() bool { return !r.Progress().LimitedUntil.IsZero() })
	if p := r.Progress(); !p.LimitedUntil.Equal(limitReset) || p.LimitKind != "five_hour" || !strings.HasPrefix(p.LastStep, "limited until ") {
		t.Errorf("progress = %+v", p)
	}
	r.Cancel()
	<-r.Done()
	res, err, ok := r.Collect()
	if !ok || err != nil || !res.Interrupted || !res.LimitedUntil.Equal(limitReset) {
		t.Errorf("collected %+v, %v, %v", res, err, ok)
	}
}

// TestUsageLimitWarning: a warning that the limit is near is shown — an
// event, a note in the result and in the session's Info — and nothing
// else changes.
func TestUsageLimitWarning(t *testing.T) {
	t.Parallel()
	clk := &testClock{}
	// The clock goes on from here: 30m30s before the reset, so that the note
	// says "in 30m…" however long (up to 29 s) the turn takes to get there.
	clk.advance(time.Until(warnReset) - 30*time.Minute - 30*time.Second)
	m := newManager(t, Config{now: clk.now})
	s := create(t, m, CreateOptions{})
	var warned []string
	r := query(t, s, "LIMITWARN hi", QueryOptions{OnEvent: func(e turn.Event) {
		if e.Kind == turn.EventLimitWarning {
			warned = append(warned, e.Text)
		}
	}})
	const want = "usage limit warning: 90% of the 5-hour limit used; it resets at 2026-11-25T16:35:02Z (in 30m"
	if r.IsError || r.FinalText != hello || !strings.HasPrefix(r.LimitNote, want) || !r.LimitedUntil.IsZero() {
		t.Errorf("result = %+v", r)
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], want) {
		t.Errorf("warning events %q", warned)
	}
	if in := s.Info(); !strings.HasPrefix(in.LimitNote, want) || !in.LimitedUntil.IsZero() {
		t.Errorf("Info = %+v", in)
	}
}
