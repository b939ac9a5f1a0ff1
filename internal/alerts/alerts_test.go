package alerts

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// receiver is a local webhook: it records the events posted and answers
// with the statuses given, in turn (then 200).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []Event
	tries    int
	arrived  chan struct{}
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses, arrived: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var e Event
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || json.NewDecoder(req.Body).Decode(&e) != nil {
			t.Errorf("a bad request: %s %s", req.Method, req.Header.Get("Content-Type"))
		}
		r.mu.Lock()
		r.tries++
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		if status == http.StatusOK {
			r.got = append(r.got, e)
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) events() ([]Event, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.got...), r.tries
}

func quick(log io.Writer) Options {
	return Options{Backoff: time.Millisecond, Log: slog.New(slog.NewTextHandler(log, nil))}
}

// TestSendDelivers: an event reaches the receiver as JSON with its fields,
// the answer cut to its first 500 characters (not bytes).
func TestSendDelivers(t *testing.T) {
	r := newReceiver(t)
	s := New([]string{r.URL}, quick(io.Discard))
	answer := strings.Repeat("é", 600)
	s.Send(Event{Kind: Finished, SessionID: "s1", Name: "fixer", User: "ann", State: "idle", CostUSD: 0.25, Answer: answer, DashboardURL: "http://127.0.0.1:1/ui/x/s/s1", Title: "fixer finished", Text: "fixer finished: é…"})
	s.Close(context.Background())
	got, _ := r.events()
	if len(got) != 1 {
		t.Fatalf("%d events delivered, want 1", len(got))
	}
	e := got[0]
	if e.Kind != Finished || e.SessionID != "s1" || e.Name != "fixer" || e.User != "ann" || e.State != "idle" || e.CostUSD != 0.25 || e.DashboardURL == "" || e.Time.IsZero() || e.Text == "" {
		t.Errorf("event %+v", e)
	}
	if n := utf8.RuneCountInString(e.Answer); n != AnswerChars+1 || !strings.HasSuffix(e.Answer, "…") || !strings.HasPrefix(answer, strings.TrimSuffix(e.Answer, "…")) {
		t.Errorf("the answer has %d characters, want the first %d and …", n, AnswerChars)
	}
}

// TestSendRetries: a receiver that fails (5xx, 429) is tried again with
// backoff until it takes the event; a 4xx it gives is final, and logged.
func TestSendRetries(t *testing.T) {
	r := newReceiver(t, 500, 429, 503)
	var log testkit.Buffer
	s := New([]string{r.URL}, quick(&log))
	s.Send(Event{Kind: Failed, SessionID: "s1"})
	s.Close(context.Background())
	if got, tries := r.events(); len(got) != 1 || tries != 4 {
		t.Errorf("%d delivered in %d tries, want 1 in 4", len(got), tries)
	}

	bad := newReceiver(t, 400)
	s = New([]string{bad.URL}, quick(&log))
	s.Send(Event{Kind: Waiting, SessionID: "s2"})
	s.Close(context.Background())
	if got, tries := bad.events(); len(got) != 0 || tries != 1 {
		t.Errorf("a 400: %d delivered in %d tries, want none in 1", len(got), tries)
	}
	if !strings.Contains(log.String(), "could not be delivered") || !strings.Contains(log.String(), "400") {
		t.Errorf("the failure is not logged:\n%s", log.String())
	}
}

// TestSendHangingReceiver: a receiver that never answers delays neither the
// caller (Send returns at once, even past the queue, the overflow logged)
// nor another receiver, and Close ends it when its context does.
func TestSendHangingReceiver(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	good := newReceiver(t)
	var log testkit.Buffer
	o := quick(&log)
	o.Queue = 4
	s := New([]string{hang.URL, good.URL}, o)
	const n = 50
	sent := make(chan struct{})
	go func() {
		for i := range n {
			s.Send(Event{Kind: Finished, SessionID: string(rune('a' + i%26))})
		}
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("Send blocked on a receiver that hangs")
	}
	// The good receiver gets events while the other hangs (its queue of 4
	// overflows too, as the test sends faster than it takes them).
	select {
	case <-good.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the good receiver got nothing while the other hung")
	}
	if !strings.Contains(log.String(), "dropped") {
		t.Errorf("the overflow is not logged:\n%s", log.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	closed := make(chan struct{})
	go func() { s.Close(ctx); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the hanging delivery when its context ended")
	}
}

// TestNilSender: without --notify there is no sender, and using it is a
// no-op.
func TestNilSender(t *testing.T) {
	s := New(nil, Options{})
	if s != nil {
		t.Fatal("a sender without URLs")
	}
	s.Send(Event{Kind: Finished})
	s.Close(context.Background())
}

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://ntfy.sh/my-topic":               true,
		"http://127.0.0.1:9000/hook":             true,
		"https://hooks.slack.com/services/T/B/X": true,
		"ntfy.sh/my-topic":                       false,
		"ftp://example.com/x":                    false,
		"https://":                               false,
		"":                                       false,
	} {
		if err := CheckURL(raw); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v", raw, err)
		}
	}
}
