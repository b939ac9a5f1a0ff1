package fleet

import "testing"

// TestTakesOver: a lapsed lease counts as a takeover only when another
// instance held it; one this instance let lapse itself, under its own
// name or its sweep's, does not, nor does a lease that was released.
func TestTakesOver(t *testing.T) {
	i, other := New(Config{}), New(Config{})
	for _, c := range []struct {
		lapsed string
		want   bool
	}{
		{"", false},
		{i.Holder(), false},
		{i.sweepHolder(), false},
		{other.Holder(), true},
		{other.sweepHolder(), true},
	} {
		if got := i.takesOver(c.lapsed); got != c.want {
			t.Errorf("takesOver(%q) = %v, want %v", c.lapsed, got, c.want)
		}
	}
}
