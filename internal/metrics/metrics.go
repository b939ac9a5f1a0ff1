// Package metrics is the server's Prometheus metrics for operators, in a
// registry of its own (never the library's global one): the sessions by
// state, the live processes and the queue for them, read from the manager
// at each scrape (Watch); the turns' latency and cost by user, told at each
// turn's end (Turn, a sessions.Config.OnAlert); the registry's write
// latency (StoreWrite, timed around the session store's writes); the lease takeovers
// (Takeover, a sessions.Config.OnTakeover); and the Go runtime's and the
// process's collectors. Handler serves them in the Prometheus text format;
// Tokens guards them with bearer tokens.
//
// It knows the manager's public methods and the hooks' shapes; sessions
// knows nothing of it (nor of Prometheus).
package metrics

import (
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/listing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
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

// States are the states the sessions gauge always has a series for, in
// the order a scrape gives them: every state a held session can be in as
// its Info reports it, the same a list filters by (listing.States).
var States = listing.States

// Buckets of the histograms, in seconds: a turn takes from a fraction of a
// second to many minutes, a registry write (two fsyncs) milliseconds.
var (
	TurnBuckets  = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 120, 300, 600, 1800}
	WriteBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)

// Metrics holds the registry and the metrics the hooks move. Its methods
// are safe for concurrent use and never block.
type Metrics struct {
	reg        *prometheus.Registry
	turns      *prometheus.HistogramVec
	cost       *prometheus.CounterVec
	storeWrite prometheus.Histogram
	takeovers  prometheus.Counter
	handler    http.Handler
}

// New returns the metrics, the Go and process collectors registered.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		turns: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    Prefix + "turn_duration_seconds",
			Help:    "Time from a turn's prompt sent to its result recorded in the session, by outcome (success, error, interrupted); a process start or a wait for a live process is not counted.",
			Buckets: TurnBuckets,
		}, []string{"outcome"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: Prefix + "cost_usd_total",
			Help: "What the turns cost in USD, as the CLI reports it, by the user of the session (" + LocalUser + " without one: stdio).",
		}, []string{UserLabel}),
		storeWrite: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    Prefix + "store_write_seconds",
			Help:    "Time of each write of the session registry, from the call (the wait for its locks included) to the synced rename.",
			Buckets: WriteBuckets,
		}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: Prefix + "lease_takeovers_total",
			Help: "Claims of other instances on sessions that had lapsed (lease expired, or process gone) and that a registry write of this instance broke.",
		}),
	}
	m.reg.MustRegister(m.turns, m.cost, m.storeWrite, m.takeovers,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// At most a few scrapes at once; promhttp_metric_handler_errors_total
	// counts the failed ones.
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, MaxRequestsInFlight: 4})
	return m
}

// Source is what a scrape reads: the sessions held, the open sessions in
// all (the store's count), the live processes and the sessions waiting for
// one (a *sessions.Manager).
type Source interface {
	List() []*sessions.Session
	Count() int
	LiveCount() int
	Queued() int
}

// Stored is the state label of the open sessions this instance does not
// hold: in the store, dormant, or live on another instance.
const Stored = "stored"

// Watch registers the metrics read from src at each scrape. Call it once.
func (m *Metrics) Watch(src Source) {
	m.reg.MustRegister(
		&byState{src: src, desc: prometheus.NewDesc(Prefix+"sessions",
			"Open sessions: those this instance holds by state (interrupting is counted as running), the others in the store as stored.", []string{"state"}, nil)},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: Prefix + "live_processes",
			Help: "Live claude CLI processes, at most --max-live (warm spares included).",
		}, func() float64 { return float64(src.LiveCount()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: Prefix + "queue_depth",
			Help: "Sessions waiting for a live process (all --max-live are busy), at most --max-queue.",
		}, func() float64 { return float64(src.Queued()) }),
	)
}

// Registry is the registry the metrics are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Turn is a sessions.Config.OnAlert: a turn's end moves the turn histogram
// and its user's cost; a permission wait (no result) moves nothing.
func (m *Metrics) Turn(a sessions.Alert) {
	r := a.Result
	if r == nil {
		return
	}
	outcome := Success
	switch {
	case r.Interrupted:
		outcome = Interrupted
	case r.IsError:
		outcome = Failed
	}
	if !a.Started.IsZero() {
		m.turns.WithLabelValues(outcome).Observe(time.Since(a.Started).Seconds())
	}
	user := a.Session.Info().Owner
	if user == "" {
		user = LocalUser
	}
	c := m.cost.WithLabelValues(user)
	if r.CostUSD > 0 {
		c.Add(r.CostUSD)
	}
}

// StoreWrite notes that one write of the session store took d.
func (m *Metrics) StoreWrite(d time.Duration) { m.storeWrite.Observe(d.Seconds()) }

// Takeover is a sessions.Config.OnTakeover: a write of this instance broke
// another instance's lapsed claim.
func (m *Metrics) Takeover() { m.takeovers.Inc() }

// byState is the sessions gauge, counted at each scrape.
type byState struct {
	src  Source
	desc *prometheus.Desc
}

func (c *byState) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *byState) Collect(ch chan<- prometheus.Metric) {
	n := map[state.State]int{}
	held := c.src.List()
	for _, s := range held {
		n[s.Info().State]++
	}
	n[Stored] = max(0, c.src.Count()-len(held))
	all := append(slices.Clone(States), Stored)
	for st := range n {
		if !slices.Contains(all, st) {
			all = append(all, st)
		}
	}
	for _, st := range all {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n[st]), string(st))
	}
}

// UserLabel is the label that names a session's user.
const UserLabel = "user"

// AnonymousHandler serves the metrics without the users' names: every
// series labelled by user is summed into one without the label. It is what
// --metrics's unauthenticated loopback listener serves, which any process
// of the machine may read (the sessions' too: they share its network);
// the users' names and spend are for the bearers of --metrics-tokens-file.
func (m *Metrics) AnonymousHandler() http.Handler {
	return promhttp.HandlerFor(withoutUsers{m.reg}, promhttp.HandlerOpts{MaxRequestsInFlight: 4})
}

// withoutUsers is a gatherer that folds the user label away.
type withoutUsers struct{ g prometheus.Gatherer }

func (w withoutUsers) Gather() ([]*dto.MetricFamily, error) {
	fams, err := w.g.Gather()
	for _, f := range fams {
		if !slices.ContainsFunc(f.Metric, hasUser) {
			continue
		}
		var sum float64
		var rest []*dto.Metric
		for _, mt := range f.Metric {
			switch {
			case !hasUser(mt):
				rest = append(rest, mt)
			case mt.Counter != nil:
				sum += mt.Counter.GetValue()
			case mt.Gauge != nil:
				sum += mt.Gauge.GetValue()
			}
		}
		folded := &dto.Metric{}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			folded.Counter = &dto.Counter{Value: &sum}
		case dto.MetricType_GAUGE:
			folded.Gauge = &dto.Gauge{Value: &sum}
		default:
			f.Metric = rest // nothing else is summed: left out
			continue
		}
		f.Metric = append(rest, folded)
	}
	return fams, err
}

// hasUser reports whether a series is labelled by user.
func hasUser(mt *dto.Metric) bool {
	return slices.ContainsFunc(mt.Label, func(l *dto.LabelPair) bool { return l.GetName() == UserLabel })
}
