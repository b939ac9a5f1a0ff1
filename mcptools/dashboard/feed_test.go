package dashboard

import (
	"fmt"
	"testing"
	"time"
)

// TestDashboardResync: a reader behind the window of a feed is told to
// resync and gets the window.
func TestDashboardResync(t *testing.T) {
	d := New(nil, Options{})
	d.maxSteps = 3
	f := &Feed{d: d, session: nil, first: 1, next: 1, start: time.Now()}
	for i := 0; i < 2; i++ {
		f.addStep(uiStep{Kind: "text", Text: fmt.Sprint(i)})
	}
	steps, lost := f.since(1)
	if lost || len(steps) != 2 {
		t.Fatalf("since(1) = %v, %v", steps, lost)
	}
	for i := 2; i < 10; i++ {
		f.addStep(uiStep{Kind: "text", Text: fmt.Sprint(i)})
	}
	steps, lost = f.since(3)
	if !lost || len(steps) != 3 || steps[0].Seq != 8 || steps[2].Text != "9" {
		t.Errorf("since(3) after the window moved = %+v, lost %v; want the last 3 and lost", steps, lost)
	}
	if _, lost := f.since(0); lost {
		t.Error("a new reader is told to resync")
	}
}

// TestFeedDoneEndsPartial: the text being written is gone from the feed
// when its whole text comes, and when the turn ends without one (an
// error, an interrupt): a page opened after the turn gets none.
func TestFeedDoneEndsPartial(t *testing.T) {
	for _, end := range []string{"text", "done"} {
		f := &Feed{d: New(nil, Options{}), first: 1, next: 1, start: time.Now()}
		f.partial.WriteString("chunk0 chunk1 ")
		if _, text, _ := f.partialSince(0, 0); text != "chunk0 chunk1 " {
			t.Fatalf("the text being written = %q", text)
		}
		f.addStep(uiStep{Kind: end, Text: "x"})
		if _, text, reset := f.partialSince(0, 0); text != "" || !reset {
			t.Errorf("after a %s step a new page gets %q as being written (reset %v)", end, text, reset)
		}
	}
}
