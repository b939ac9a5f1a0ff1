// Package promtext reads a scrape of the Prometheus text format in tests:
// Scrape fetches and parses it (with the format's own parser, expfmt), and
// Families finds a series by its labels.
package promtext

import (
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Scrape GETs url (with the bearer token when not "") and parses the
// answer, which must be 200 in the text format.
func Scrape(t testing.TB, client *http.Client, url, token string) Families {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %s\n%s", url, resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("scraping %s: Content-Type %q, want the text format (text/plain)", url, ct)
	}
	return Parse(t, string(body))
}

// Parse parses text in the Prometheus text format.
func Parse(t testing.TB, text string) Families {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, text)
	}
	return fams
}

// Metric is the series of family name whose labels include labels (pairs
// of name and value), or nil; it fails t when the family is missing or
// has no help text.
func (f Families) Metric(t testing.TB, name string, labels ...string) *dto.Metric {
	t.Helper()
	fam, ok := f[name]
	if !ok {
		t.Fatalf("the scrape has no %s", name)
	}
	if fam.GetHelp() == "" {
		t.Errorf("%s has no HELP text", name)
	}
	for _, m := range fam.GetMetric() {
		if hasLabels(m, labels) {
			return m
		}
	}
	return nil
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Value is the value of a gauge, counter or untyped series (NaN-free: -1
// when m is nil), or a histogram's sample count.
func Value(m *dto.Metric) float64 {
	switch {
	case m == nil:
		return -1
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return -1
}
