// Package alerts tells people, through webhooks (--notify URL), that a
// sub-agent finished, failed, stopped on its budget or waits for a
// permission answer: a small JSON event POSTed to each URL in the
// background, with retries and backoff. Sending never delays the caller: a
// receiver that hangs or fails holds up only its own queue, and what
// cannot be delivered is logged. It knows nothing of sessions or MCP; the
// server fills the Event.
package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"
	"unicode/utf8"
)

// Kind is what happened.
type Kind string

// The events sent.
const (
	Finished Kind = "finished" // a turn answered
	Failed   Kind = "failed"   // a turn ended in an error
	Budget   Kind = "budget"   // a turn stopped on a budget
	Waiting  Kind = "waiting"  // a turn waits for an answer: a permission, or the model's questions (Tool "AskUserQuestion")
)

// AnswerChars is how much of the answer an event carries, in characters.
const AnswerChars = 500

// Event is what a receiver gets, as JSON. Title and Text are a summary for
// chat webhooks that show one field (Slack's text; ntfy's templates, e.g.
// ?tpl=1&t={{.title}}&m={{.text}}).
type Event struct {
	Kind         Kind      `json:"event"`
	SessionID    string    `json:"sessionId"`
	Name         string    `json:"name,omitempty"`
	User         string    `json:"user"` // "" on stdio
	State        string    `json:"state"`
	CostUSD      float64   `json:"costUsd"`
	Answer       string    `json:"answer,omitempty"` // its first AnswerChars characters
	Tool         string    `json:"tool,omitempty"`   // Waiting: the tool asking
	DashboardURL string    `json:"dashboardUrl,omitempty"`
	Time         time.Time `json:"time"`
	Title        string    `json:"title"`
	Text         string    `json:"text"`
}

// Options tune a Sender; the zero value is the default.
type Options struct {
	Client  *http.Client  // default: a client with a 10 s timeout
	Retries int           // tries after the first; default 4
	Backoff time.Duration // before the first retry, doubled after each; default 1 s
	Queue   int           // events waiting per URL; default 64
	Log     *slog.Logger
}

// Sender posts events to its URLs, each from its own goroutine.
type Sender struct {
	o       Options
	targets []*target
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.RWMutex // Send holds it to read, Close to set closed
	closed bool
}

type target struct {
	url string
	q   chan Event

	mu      sync.Mutex
	dropped int // events dropped since the last one logged
}

// CheckURL checks a --notify value: an absolute http or https URL.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid --notify %q: use an http or https URL, such as https://ntfy.sh/my-topic", raw)
	}
	return nil
}

// New starts a Sender for urls (nil without any: Send and Close do
// nothing).
func New(urls []string, o Options) *Sender {
	if len(urls) == 0 {
		return nil
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Retries == 0 {
		o.Retries = 4
	}
	if o.Backoff == 0 {
		o.Backoff = time.Second
	}
	if o.Queue == 0 {
		o.Queue = 64
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Sender{o: o}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, u := range urls {
		t := &target{url: u, q: make(chan Event, o.Queue)}
		s.targets = append(s.targets, t)
		s.wg.Add(1)
		go s.run(t)
	}
	return s
}

// Send queues e for every URL and returns at once; an event a full queue
// cannot take is dropped and counted in the log.
func (s *Sender) Send(e Event) {
	if s == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Answer = firstChars(e.Answer, AnswerChars)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	for _, t := range s.targets {
		select {
		case t.q <- e:
		default:
			t.mu.Lock()
			t.dropped++
			first := t.dropped == 1
			t.mu.Unlock()
			if first {
				s.o.Log.Warn("an alert was dropped: its receiver is behind", "url", t.url, "event", e.Kind, "session", e.SessionID)
			}
		}
	}
}

// Close stops sending: what is queued is given until ctx ends to be
// delivered, then dropped. A Send after Close does nothing.
func (s *Sender) Close(ctx context.Context) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for _, t := range s.targets {
		close(t.q)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel()
		<-done
	}
	s.cancel()
}

// run delivers t's events in order.
func (s *Sender) run(t *target) {
	defer s.wg.Done()
	for e := range t.q {
		if s.ctx.Err() != nil {
			continue // closing: drain
		}
		t.mu.Lock()
		dropped := t.dropped
		t.dropped = 0
		t.mu.Unlock()
		if dropped > 1 {
			s.o.Log.Warn("alerts were dropped: their receiver is behind", "url", t.url, "dropped", dropped)
		}
		if err := s.deliver(t.url, e); err != nil {
			s.o.Log.Warn("an alert could not be delivered", "url", t.url, "event", e.Kind, "session", e.SessionID, "err", err)
		}
	}
}

// deliver posts e, retrying with a doubling backoff on errors and on
// answers other than 2xx (but for 4xx, which a retry will not change,
// except 408 and 429).
func (s *Sender) deliver(u string, e Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	wait := s.o.Backoff
	for try := 0; ; try++ {
		err = s.post(u, body)
		if err == nil || try == s.o.Retries || !retryable(err) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-s.ctx.Done():
			return fmt.Errorf("closing: %w", err)
		}
		wait *= 2
	}
}

// statusError is an answer other than 2xx.
type statusError int

func (c statusError) Error() string {
	return fmt.Sprintf("the receiver answered %d %s", int(c), http.StatusText(int(c)))
}

func retryable(err error) bool {
	var c statusError
	if !errors.As(err, &c) {
		return true
	}
	return c >= 500 || c == http.StatusRequestTimeout || c == http.StatusTooManyRequests
}

func (s *Sender) post(u string, body []byte) error {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "claude-agent-mcp")
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(resp.StatusCode)
	}
	return nil
}

// firstChars is s cut to its first n characters, with "…" when cut.
func firstChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k] + "…"
		}
		i++
	}
	return s
}
