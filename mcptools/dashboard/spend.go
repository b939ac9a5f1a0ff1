package dashboard

// What sessions cost over time, and its charts: a bounded list of samples
// (each session's cumulative cost at the start and end of its turns) and
// the line charts drawn from it, as the points of inline SVG lines (no
// script).

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// spendSample is a session's cumulative cost at a moment.
type spendSample struct {
	T       time.Time
	Session string
	Name    string
	Owner   string
	Cost    float64
}

// maxSamples bounds the record: beyond it the oldest tenth goes.
const maxSamples = 10000

// spendRecord is the samples since the server started.
type spendRecord struct {
	start time.Time
	mu    sync.Mutex
	s     []spendSample
}

// newSpendRecord starts an empty record now.
func newSpendRecord() *spendRecord { return &spendRecord{start: time.Now()} }

// Add appends a sample.
func (r *spendRecord) Add(s spendSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.s) >= maxSamples {
		r.s = append(r.s[:0], r.s[len(r.s)/10:]...) // the oldest tenth goes
	}
	r.s = append(r.s, s)
}

// spendChart is a small line chart of cumulative spend.
type spendChart struct {
	Title  string
	Lines  []spendLine
	Max    string
	Span   string
	Width  int
	Height int
}

// spendLine is one series of a chart.
type spendLine struct {
	Label  string
	Color  string
	Points string
	Total  float64
}

var spendColors = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"}

// Charts draws the spend over time per session of the owners visible
// says yes to and, with perUser, per user: a user's spend is the sum of
// their sessions' latest costs.
func (r *spendRecord) Charts(visible func(owner string) bool, perUser bool) []spendChart {
	r.mu.Lock()
	var samples []spendSample
	for _, s := range r.s {
		if visible(s.Owner) {
			samples = append(samples, s)
		}
	}
	r.mu.Unlock()
	if len(samples) == 0 {
		return nil
	}
	bySession := map[string][]spendSample{}
	labels := map[string]string{}
	for _, s := range samples {
		bySession[s.Session] = append(bySession[s.Session], s)
		labels[s.Session] = s.Name
		if labels[s.Session] == "" {
			labels[s.Session] = s.Session[:min(8, len(s.Session))]
		}
	}
	byUser := map[string][]spendSample{}
	latest := map[string]float64{}
	for _, s := range samples {
		latest[s.Session] = s.Cost
		sum := 0.0
		for id, c := range latest {
			if bySession[id][0].Owner == s.Owner {
				sum += c
			}
		}
		owner := s.Owner
		if owner == "" {
			owner = "local"
		}
		byUser[owner] = append(byUser[owner], spendSample{T: s.T, Cost: sum})
		labels["user:"+owner] = owner
	}
	t0, t1 := r.start, time.Now()
	out := []spendChart{drawSpend("Spend per session", bySession, labels, "", t0, t1)}
	if perUser {
		out = append(out, drawSpend("Spend per user", byUser, labels, "user:", t0, t1))
	}
	return out
}

func drawSpend(title string, series map[string][]spendSample, labels map[string]string, prefix string, t0, t1 time.Time) spendChart {
	const w, h = 480, 140
	c := spendChart{Title: title, Width: w, Height: h, Span: t1.Sub(t0).Round(time.Second).String()}
	keys := make([]string, 0, len(series))
	top := 0.0
	for k, ss := range series {
		keys = append(keys, k)
		top = max(top, ss[len(ss)-1].Cost)
	}
	// The costliest eight, largest first.
	slices.SortFunc(keys, func(a, b string) int {
		ca, cb := series[a][len(series[a])-1].Cost, series[b][len(series[b])-1].Cost
		switch {
		case ca > cb:
			return -1
		case ca < cb:
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(keys) > len(spendColors) {
		keys = keys[:len(spendColors)]
	}
	if top <= 0 {
		top = 1e-6
	}
	c.Max = "$" + strconv.FormatFloat(top, 'f', 4, 64)
	span := max(t1.Sub(t0).Seconds(), 1)
	x := func(t time.Time) float64 { return float64(w) * t.Sub(t0).Seconds() / span }
	y := func(v float64) float64 { return float64(h) - float64(h-4)*v/top }
	for i, k := range keys {
		var b strings.Builder
		last := 0.0
		for j, s := range series[k] {
			if j > 0 {
				b.WriteByte(' ')
			}
			// A step: the cost holds until the next sample.
			if j > 0 {
				fmt.Fprintf(&b, "%.1f,%.1f ", x(s.T), y(last))
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x(s.T), y(s.Cost))
			last = s.Cost
		}
		fmt.Fprintf(&b, " %.1f,%.1f", float64(w), y(last))
		c.Lines = append(c.Lines, spendLine{Label: labels[prefix+k], Color: spendColors[i], Points: b.String(), Total: last})
	}
	return c
}
