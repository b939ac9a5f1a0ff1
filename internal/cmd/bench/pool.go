package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Pooling: one run of 60 rounds swings by several percent, much of it from
// the CLI processes the run happens to compare, so a target is judged on
// several runs together. -pool reads the raw samples at the end of bench
// reports and gives each ratio of the report over all of them: the ratio
// of the pooled p50s, the median of the per-round ratios, and each
// report's own.

// readSamples reads the raw samples ("- key: 12.3 45.6 ...", in ms) of one
// bench report.
func readSamples(r io.Reader) (map[string][]time.Duration, error) {
	out := map[string][]time.Duration{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		key, rest, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "- "), ": ")
		if !ok || !strings.HasPrefix(sc.Text(), "- ") || !knownFigure(key) {
			continue
		}
		var ds []time.Duration
		for f := range strings.FieldsSeq(rest) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("figure %s: %q is not a number of milliseconds", key, f)
			}
			ds = append(ds, time.Duration(v*float64(time.Millisecond)))
		}
		out[key] = ds
	}
	return out, sc.Err()
}

func knownFigure(key string) bool {
	return slices.ContainsFunc(figures, func(f struct{ key, what string }) bool { return f.key == key })
}

// pool writes the pooled ratios of the reports at paths to w.
func pool(w io.Writer, paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("-pool needs the bench reports to pool as arguments")
	}
	var runs []map[string][]time.Duration
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		run, err := readSamples(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if len(run) == 0 {
			return fmt.Errorf("%s: no raw samples (lines \"- figure: ms ms ...\") in it", p)
		}
		runs = append(runs, run)
	}
	writePool(w, runs)
	return nil
}

// writePool is pool's table for runs already read. Each ratio pools only
// the runs that have both of its figures.
func writePool(w io.Writer, runs []map[string][]time.Duration) {
	fmt.Fprintf(w, "%d reports pooled. Ratio of the pooled p50s, the median of the per-round ratios (both nearest rank), and each report's ratio of p50s.\n\n", len(runs))
	fmt.Fprintln(w, "| ratio | pooled p50s | per-round median | rounds | each report | target | met |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | --- | ---: | --- |")
	for _, q := range ratios {
		var all [2][]time.Duration
		var per []float64
		var each []string
		for _, run := range runs {
			a, b := run[q.a], run[q.b]
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			all[0], all[1] = append(all[0], a...), append(all[1], b...)
			each = append(each, fmt.Sprintf("%.3f", float64(pct(a, 0.5))/float64(pct(b, 0.5))))
			if len(a) == len(b) { // the same rounds: sample i of each is round i
				for i := range a {
					per = append(per, float64(a[i])/float64(b[i]))
				}
			}
		}
		if len(each) == 0 {
			continue
		}
		pa, pb := pct(all[0], 0.5), pct(all[1], 0.5)
		r := float64(pa) / float64(pb)
		median := "—"
		if len(per) > 0 {
			slices.Sort(per)
			median = fmt.Sprintf("%.3f", per[(len(per)-1)/2])
		}
		t, ok := q.judged(r)
		fmt.Fprintf(w, "| %s | %s / %s = %.3f | %s | %d | %s | %s | %s |\n", q.what, ms(pa), ms(pb), r, median, len(per), strings.Join(each, ", "), t, ok)
	}
}
