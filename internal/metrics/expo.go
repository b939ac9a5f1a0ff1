package metrics

import (
	"bufio"
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The Prometheus text exposition format, version 0.0.4: "# HELP" and
// "# TYPE" before each metric's samples, "name{label="value"} value"
// lines; a histogram is its cumulative _bucket{le=…} samples (+Inf last),
// _sum and _count.

// expo writes samples in the text format.
type expo struct{ w *bufio.Writer }

// header writes a metric's HELP and TYPE lines.
func (e *expo) header(name, typ, help string) {
	e.w.WriteString("# HELP " + name + " " + strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help) + "\n")
	e.w.WriteString("# TYPE " + name + " " + typ + "\n")
}

// sample writes one sample, with one label when label is not "".
func (e *expo) sample(name, label, value string, v float64) {
	e.labelled(name, v, label, value)
}

// labelled writes one sample with the labels given as name, value pairs.
func (e *expo) labelled(name string, v float64, labels ...string) {
	e.w.WriteString(name)
	sep := "{"
	for i := 0; i+1 < len(labels); i += 2 {
		if labels[i] == "" {
			continue
		}
		e.w.WriteString(sep + labels[i] + `="` + escapeLabel(labels[i+1]) + `"`)
		sep = ","
	}
	if sep == "," {
		e.w.WriteString("}")
	}
	e.w.WriteString(" " + formatFloat(v) + "\n")
}

// escapeLabel escapes a label's value: backslash, double quote, newline.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// histogram is one histogram's buckets (their upper bounds), the
// observations in each (not cumulative), their sum and count; its owner
// holds the lock.
type histogram struct {
	buckets []float64
	counts  []uint64
	sum     float64
	count   uint64
}

func (h *histogram) observe(v float64) {
	if i, _ := slices.BinarySearch(h.buckets, v); i < len(h.buckets) {
		h.counts[i]++
	}
	h.sum += v
	h.count++
}

// write writes the histogram's samples, with one label when label is not
// "".
func (h *histogram) write(e *expo, name, label, value string) {
	var cum uint64
	for i, le := range h.buckets {
		cum += h.counts[i]
		e.labelled(name+"_bucket", float64(cum), label, value, "le", formatFloat(le))
	}
	e.labelled(name+"_bucket", float64(h.count), label, value, "le", "+Inf")
	e.labelled(name+"_sum", h.sum, label, value)
	e.labelled(name+"_count", float64(h.count), label, value)
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}
