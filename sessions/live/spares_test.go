package live

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/leakcheck"
)

// TestMain lets the test binary double as the fake claude CLI (see
// fakecli.Command).
func TestMain(m *testing.M) { fakecli.TestMain(m) }

// fakeSpares returns spares whose option set is a working directory,
// started as the fake CLI; before, when set, runs before each start. At
// cleanup they are closed and the pool must be empty.
func fakeSpares(t *testing.T, sets, max int, before func(cwd string)) (*Spares[string], *Pool) {
	t.Helper()
	path, env := fakecli.Command(t)
	p := newPool(max, 4)
	st := NewSpares(SparesConfig[string]{
		Sets:         sets,
		Pool:         p,
		StartTimeout: waitLimit,
		Options: func(cwd string) (claudeagent.Options, bool) {
			return claudeagent.Options{Cwd: cwd}, cwd != ""
		},
		Start: func(ctx context.Context, o claudeagent.Options, log *slog.Logger) (*claudeagent.Process, *claudeagent.InitializeResponse, error) {
			if before != nil {
				before(o.Cwd)
			}
			o.Path, o.Logger, o.CloseTimeout = path, log, 2*time.Second
			o.Env = maps.Clone(env)
			proc, err := claudeagent.Start(ctx, o)
			if err != nil {
				return nil, nil, err
			}
			resp, err := proc.Initialize(ctx, claudeagent.InitializeRequest{})
			if err != nil {
				proc.Kill()
				<-proc.Done()
				return nil, nil, err
			}
			return proc, resp, nil
		},
	})
	t.Cleanup(func() {
		st.Close()
		if n := p.Count(); n != 0 {
			t.Errorf("%d live places after Close", n)
		}
	})
	return st, p
}

func readySpares(st *Spares[string]) []*Spare { return st.Snapshot().Ready }

// TestSpareKey: the key is the process a session would start, its own
// session id aside.
func TestSpareKey(t *testing.T) {
	t.Parallel()
	base := claudeagent.Options{Cwd: "/a", SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}}
	same := base
	same.SessionID = "a5a5a5a5-0000-4000-8000-000000000000"
	if SpareKey(same) != SpareKey(base) {
		t.Error("the session id changed the key")
	}
	for _, o := range []claudeagent.Options{
		{Cwd: "/b", SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}},
		{Cwd: "/a", SessionOptions: claudeagent.SessionOptions{Model: "opus"}},
		{Cwd: "/a", SessionOptions: claudeagent.SessionOptions{Model: "sonnet"}, Env: map[string]string{"X": "1"}},
	} {
		if SpareKey(o) == SpareKey(base) {
			t.Errorf("%+v has the key of %+v", o, base)
		}
	}
}

// TestSpareTake: a ready spare holds a live place and is idle; Take hands
// the place and the control requests to the taker, and only for its key;
// Evict stops an untaken spare and frees its place, never a taken one.
func TestSpareTake(t *testing.T) {
	t.Parallel()
	st, p := fakeSpares(t, 2, 4, nil)
	a, b := t.TempDir(), t.TempDir()
	st.Want(a)
	st.Want(b)
	testkit.Until(t, waitLimit, "two spares", func() bool { return len(readySpares(st)) == 2 })
	if sn := st.Snapshot(); len(sn.Wanted) != 2 || sn.Wanted[0] != SpareKey(claudeagent.Options{Cwd: b}) {
		t.Errorf("wanted %v, want b's key first", sn.Wanted)
	}
	if p.Count() != 2 {
		t.Errorf("live %d with two spares", p.Count())
	}
	if st.Take("no such key", &holder{pool: p}, nil) != nil {
		t.Error("Take of a key nobody wanted")
	}

	taker := &holder{pool: p}
	errTaker := errors.New("the taker's answer")
	sp := st.Take(SpareKey(claudeagent.Options{Cwd: a}), taker, func(context.Context, *claudeagent.ControlRequest) (any, error) {
		return nil, errTaker
	})
	if sp == nil || sp.Process() == nil || sp.Initialized() == nil || sp.SessionID() == "" {
		t.Fatalf("Take: %+v", sp)
	}
	t.Cleanup(func() {
		if err := sp.Process().Close(); err != nil {
			t.Errorf("closing the taken spare's process: %v", err)
		}
		p.Release(taker)
	})
	if _, err := sp.onControl(context.Background(), &claudeagent.ControlRequest{}); err != errTaker {
		t.Errorf("the taken spare's control requests: %v", err)
	}
	if _, idle := sp.IdleSince(); idle || sp.Evict("test") {
		t.Error("a taken spare is idle or evicted")
	}
	p.Release(sp) // the place is the taker's now
	if p.Count() != 2 {
		t.Errorf("live %d after the take", p.Count())
	}

	other := readySpares(st)[0]
	if since, idle := other.IdleSince(); !idle || !since.IsZero() {
		t.Errorf("a ready spare: idle %v since %v, want idle since the zero time", idle, since)
	}
	if _, err := other.onControl(context.Background(), &claudeagent.ControlRequest{}); !errors.Is(err, claudeagent.ErrUnsupportedControl) {
		t.Errorf("an untaken spare's control requests: %v", err)
	}
	if !other.Evict("test") {
		t.Fatal("Evict of a ready spare")
	}
	leakcheck.CheckGone(t, other.Process().PID())
	if p.Count() != 1 || len(readySpares(st)) != 0 {
		t.Errorf("after the eviction: live %d, ready %d", p.Count(), len(readySpares(st)))
	}
}

// TestSpareReplacedWhileStarting: a spare whose option set stops being
// wanted while it starts (another option set came first) is stopped once
// it is up, instead of joining the ready ones: never more spares than
// Sets.
func TestSpareReplacedWhileStarting(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	aStarting, letA := make(chan struct{}), make(chan struct{})
	var once sync.Once
	st, p := fakeSpares(t, 1, 4, func(cwd string) {
		if cwd == a {
			once.Do(func() { close(aStarting) })
			<-letA
		}
	})
	st.Want(a) // starts a's spare in the background
	receive(t, "a's start", aStarting)
	st.Want(b) // b replaces a while a's spare is still starting
	close(letA)
	testkit.Until(t, waitLimit, "the starts to end and a spare to be ready", func() bool {
		sn := st.Snapshot()
		return sn.Starting == 0 && len(sn.Ready) > 0
	})
	sn := st.Snapshot()
	var keys []string
	for _, sp := range sn.Ready {
		keys = append(keys, sp.Key())
	}
	if want := SpareKey(claudeagent.Options{Cwd: b}); len(keys) != 1 || keys[0] != want || sn.Wanted[0] != want {
		t.Errorf("ready spares %v, want only b's %s", keys, want)
	}
	testkit.Until(t, waitLimit, "a's spare to stop", func() bool { return p.Count() == 1 })
}
