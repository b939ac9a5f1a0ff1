package policy

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// TestEveryOptionClassified: every session option has a policy classifier,
// and every classifier names an option. A new option without a class fails
// here (and is refused by the gate at run time).
func TestEveryOptionClassified(t *testing.T) {
	names := jsonNames(reflect.TypeFor[options.CreateOptions]())
	if len(names) < 20 {
		t.Fatalf("found only %d options: %v", len(names), names)
	}
	for _, n := range names {
		if _, ok := optionClasses[n]; !ok {
			t.Errorf("session option %q has no policy class: add it to optionClasses (sessions/policy/classes.go)", n)
		}
	}
	for n := range optionClasses {
		if !slices.Contains(names, n) {
			t.Errorf("optionClasses has %q, which is no session option", n)
		}
	}
}

// TestUnclassifiedOptionRefused: the gate refuses an option it has no
// classifier for.
func TestUnclassifiedOptionRefused(t *testing.T) {
	classes := maps.Clone(optionClasses)
	delete(classes, "name")
	opts := options.CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{Name: "x"}}
	if _, err := optionUsesWith(classes, &opts); !errors.Is(err, errUnclassified) {
		t.Errorf("an option without a class = %v, want it refused", err)
	}
	opts.Name = ""
	if _, err := optionUsesWith(classes, &opts); err != nil {
		t.Errorf("options without the unclassified one: %v", err)
	}
}
