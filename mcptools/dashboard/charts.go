package dashboard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The list's spend charts: the spend over time per session and per user,
// drawn here as the points of inline SVG lines (no script).

// spendChart is a small line chart of cumulative spend (inline SVG, drawn
// here: no script).
type spendChart struct {
	Title  string
	Lines  []chartLine
	Max    string
	Span   string
	Width  int
	Height int
}

type chartLine struct {
	Label  string
	Color  string
	Points string
	Total  float64
}

var chartColors = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"}

// charts draws the spend over time per session and per user (over HTTP,
// an admin sees every user), from the samples taken at each turn's start
// and end since the server started.
func (d *Dashboard) charts(si *signin) []spendChart {
	d.mu.Lock()
	var samples []spendSample
	for _, s := range d.spend {
		if d.visible(si, s.Owner) {
			samples = append(samples, s)
		}
	}
	d.mu.Unlock()
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
	// A user's spend is the sum of their sessions' latest costs.
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
	t0, t1 := d.start, time.Now()
	out := []spendChart{drawChart("Spend per session", bySession, labels, "", t0, t1)}
	if d.overHTTP {
		out = append(out, drawChart("Spend per user", byUser, labels, "user:", t0, t1))
	}
	return out
}

func drawChart(title string, series map[string][]spendSample, labels map[string]string, prefix string, t0, t1 time.Time) spendChart {
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
	if len(keys) > len(chartColors) {
		keys = keys[:len(chartColors)]
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
		c.Lines = append(c.Lines, chartLine{Label: labels[prefix+k], Color: chartColors[i], Points: b.String(), Total: last})
	}
	return c
}
