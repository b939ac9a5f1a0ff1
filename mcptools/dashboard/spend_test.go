package dashboard

import (
	"strings"
	"testing"
	"time"
)

// TestCharts: a chart per session of the visible owners, the costliest
// first, and per user (the sum of their sessions' latest costs); the
// record keeps at most maxSamples.
func TestCharts(t *testing.T) {
	r := newSpendRecord()
	now := time.Now()
	r.Add(spendSample{T: now, Session: "s1", Name: "cheap", Owner: "ann", Cost: 0.1})
	r.Add(spendSample{T: now, Session: "s2", Name: "dear", Owner: "ann", Cost: 0.5})
	r.Add(spendSample{T: now, Session: "s3", Name: "bob's", Owner: "bob", Cost: 0.9})
	cs := r.Charts(func(owner string) bool { return owner == "ann" }, true)
	if len(cs) != 2 || cs[0].Title != "Spend per session" || cs[1].Title != "Spend per user" {
		t.Fatalf("charts %+v", cs)
	}
	if l := cs[0].Lines; len(l) != 2 || l[0].Label != "dear" || l[1].Label != "cheap" || strings.Contains(l[0].Points+l[1].Points, "bob") {
		t.Errorf("per session: %+v", l)
	}
	if l := cs[1].Lines; len(l) != 1 || l[0].Label != "ann" || l[0].Total < 0.59 || l[0].Total > 0.61 {
		t.Errorf("per user: %+v", l)
	}
	if cs := r.Charts(func(string) bool { return false }, false); cs != nil {
		t.Errorf("nothing visible: %+v", cs)
	}
	for range maxSamples + 5 {
		r.Add(spendSample{T: now, Session: "s1", Cost: 1})
	}
	if n := len(r.s); n > maxSamples {
		t.Errorf("%d samples kept, at most %d", n, maxSamples)
	}
}
