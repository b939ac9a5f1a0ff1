// Package metrics is the server's Prometheus metrics for operators: the
// sessions by state, the live processes and the queue for them, counted at
// each scrape (Watch); the turns' latency and cost by user, told at each
// turn's end (Turn); the store's write latency (StoreWrite, timed around
// the session store's writes); the lease takeovers (Takeover); and the Go
// runtime's and the process's figures (runtime.go). Handler serves them in
// the Prometheus text exposition format (0.0.4), written here (expo.go):
// the client library and its protobuf would cost every start of the
// binary, the jail's wrapper's included, about 1.5 ms of package
// initialization (BENCHMARKS.md); Tokens guards them with bearer tokens.
//
// It knows counts, times and users, not sessions: the server counts for it
// (cmd/claude-agent-mcp/metrics.go), and sessions knows nothing of it.
package metrics

import (
	"bufio"
	"net/http"
	"sync"
	"time"
)

// Prefix starts every metric of the server's own.
const Prefix = "claude_agent_mcp_"

// LocalUser is the user label of sessions without an owner (stdio, or
// --http without tokens).
const LocalUser = "local"

// Outcomes of a turn (the outcome label of the turn histogram).
const (
	Success     = "success"
	Failed      = "error"
	Interrupted = "interrupted"
)

// Buckets of the histograms, in seconds: a turn takes from a fraction of a
// second to many minutes, a store write milliseconds.
var (
	TurnBuckets  = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 120, 300, 600, 1800}
	WriteBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)

// Metrics holds what the hooks move and the source a scrape reads. Its
// methods are safe for concurrent use and never block for long.
type Metrics struct {
	mu         sync.Mutex
	turns      map[string]*histogram // by outcome
	cost       map[string]float64    // by user
	storeWrite histogram
	takeovers  float64
	src        Source

	scrapes chan struct{} // at most maxScrapes at once
}

// maxScrapes is how many scrapes are served at once; more get 503.
const maxScrapes = 4

// UserLabel is the label that names a session's user.
const UserLabel = "user"

// New returns the metrics.
func New() *Metrics {
	return &Metrics{turns: map[string]*histogram{}, cost: map[string]float64{},
		storeWrite: histogram{buckets: WriteBuckets, counts: make([]uint64, len(WriteBuckets))},
		scrapes:    make(chan struct{}, maxScrapes)}
}

// Counts is what a scrape reads of the sessions: those this instance
// holds by state (Held: every state the gauge always has a series for,
// in the order a scrape gives them), the open sessions in all (Open, the
// store's count), the live processes (Live) and the sessions waiting for
// one (Queued).
type Counts struct {
	Held               []StateCount
	Open, Live, Queued int
}

// StateCount is how many sessions are in a state.
type StateCount struct {
	State string
	N     int
}

// Source counts the sessions at each scrape.
type Source func() Counts

// TurnEnd is a turn's end as the metrics count it: whose ("" is
// LocalUser), when its prompt was sent (zero: not timed), what it cost,
// and how it ended.
type TurnEnd struct {
	User                 string
	Started              time.Time
	CostUSD              float64
	IsError, Interrupted bool
}

// Stored is the state label of the open sessions this instance does not
// hold: in the store, dormant, or live on another instance.
const Stored = "stored"

// Watch makes each scrape read src. Call it once.
func (m *Metrics) Watch(src Source) {
	m.mu.Lock()
	m.src = src
	m.mu.Unlock()
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return m.handler(false) }

// AnonymousHandler serves the metrics without the users' names: the cost
// is summed over the users, without the label. It is what --metrics's
// unauthenticated loopback listener serves, which any process of the
// machine may read (the sessions' too: they share its network); the users'
// names and spend are for the bearers of --metrics-tokens-file.
func (m *Metrics) AnonymousHandler() http.Handler { return m.handler(true) }

func (m *Metrics) handler(anonymous bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case m.scrapes <- struct{}{}:
			defer func() { <-m.scrapes }()
		default:
			http.Error(w, "too many scrapes at once", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		m.write(&expo{w: bw}, anonymous)
		_ = bw.Flush()
	})
}

// Turn notes a turn's end: it moves the turn histogram and its user's
// cost.
func (m *Metrics) Turn(t TurnEnd) {
	outcome := Success
	switch {
	case t.Interrupted:
		outcome = Interrupted
	case t.IsError:
		outcome = Failed
	}
	user := t.User
	if user == "" {
		user = LocalUser
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !t.Started.IsZero() {
		h := m.turns[outcome]
		if h == nil {
			h = &histogram{buckets: TurnBuckets, counts: make([]uint64, len(TurnBuckets))}
			m.turns[outcome] = h
		}
		h.observe(time.Since(t.Started).Seconds())
	}
	m.cost[user] += max(t.CostUSD, 0)
}

// StoreWrite notes that one write of the session store took d.
func (m *Metrics) StoreWrite(d time.Duration) {
	m.mu.Lock()
	m.storeWrite.observe(d.Seconds())
	m.mu.Unlock()
}

// Takeover notes that a write of this instance broke
// another instance's lapsed claim.
func (m *Metrics) Takeover() {
	m.mu.Lock()
	m.takeovers++
	m.mu.Unlock()
}

// write writes every metric; anonymous sums the cost over the users.
func (m *Metrics) write(e *expo, anonymous bool) {
	m.mu.Lock()
	src := m.src
	m.mu.Unlock()
	if src != nil {
		writeSources(e, src)
	}
	m.mu.Lock()
	e.header(Prefix+"turn_duration_seconds", "histogram", "Time from a turn's prompt sent to its result recorded in the session, by outcome (success, error, interrupted); a process start or a wait for a live process is not counted.")
	for _, outcome := range sortedKeys(m.turns) {
		m.turns[outcome].write(e, Prefix+"turn_duration_seconds", "outcome", outcome)
	}
	e.header(Prefix+"cost_usd_total", "counter", "What the turns cost in USD, as the CLI reports it, by the user of the session ("+LocalUser+" without one: stdio).")
	if anonymous && len(m.cost) > 0 {
		sum := 0.0
		for _, v := range m.cost {
			sum += v
		}
		e.sample(Prefix+"cost_usd_total", "", "", sum)
	} else if !anonymous {
		for _, user := range sortedKeys(m.cost) {
			e.sample(Prefix+"cost_usd_total", UserLabel, user, m.cost[user])
		}
	}
	e.header(Prefix+"store_write_seconds", "histogram", "Time of each write of a session's record in the session store, from the call (the wait for its locks included) to its commit.")
	m.storeWrite.write(e, Prefix+"store_write_seconds", "", "")
	e.header(Prefix+"lease_takeovers_total", "counter", "Claims of other instances on sessions that had lapsed (lease expired, or process gone) and that a write of this instance broke.")
	e.sample(Prefix+"lease_takeovers_total", "", "", m.takeovers)
	m.mu.Unlock()
	writeRuntime(e)
}

// writeSources writes the figures read from src at the scrape.
func writeSources(e *expo, src Source) {
	c := src()
	held := 0
	e.header(Prefix+"sessions", "gauge", "Open sessions: those this instance holds by state (interrupting is counted as running), the others in the store as stored.")
	for _, sc := range c.Held {
		held += sc.N
		e.sample(Prefix+"sessions", "state", sc.State, float64(sc.N))
	}
	e.sample(Prefix+"sessions", "state", Stored, float64(max(0, c.Open-held)))
	e.header(Prefix+"live_processes", "gauge", "Live claude CLI processes, at most --max-live (warm spares included).")
	e.sample(Prefix+"live_processes", "", "", float64(c.Live))
	e.header(Prefix+"queue_depth", "gauge", "Sessions waiting for a live process (all --max-live are busy), at most --max-queue.")
	e.sample(Prefix+"queue_depth", "", "", float64(c.Queued))
}
