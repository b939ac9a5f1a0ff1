package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// SettingSources are the sources a session with o loads: its own
// settingSources, else the operator's (nil: the CLI's default).
func (g *Gate) SettingSources(o *options.CreateOptions) []string {
	if o.SettingSources != nil {
		return o.SettingSources
	}
	return g.cfg.SettingSources
}

// checkSources checks what a session loads beyond its options: its
// settingSources within the operator's (--setting-sources), and the agent
// that runs it (agent, and settings.agent among uses) one of its own
// agents — never one the CLI would find by itself in a directory of the
// server's user or of the project, whose hooks and servers no one
// classified.
func (g *Gate) checkSources(o *options.CreateOptions, uses []Use) error {
	if allowed := g.cfg.SettingSources; allowed != nil {
		for _, src := range o.SettingSources {
			if !slices.Contains(allowed, src) {
				have := strings.Join(allowed, ",")
				if have == "" {
					have = "none"
				}
				return fmt.Errorf("settingSources entry %q is beyond the sources this server lets sessions load (--setting-sources %s): narrow it, or leave settingSources out", src, have)
			}
		}
	}
	names, err := o.AgentNames()
	if err != nil {
		return err
	}
	check := func(what, agent string) error {
		if agent == "" || slices.Contains(names, agent) {
			return nil
		}
		return fmt.Errorf("%s %q is not one of the session's own agents: define it in agents (or use its agent tool); an agent the CLI would load from a directory of its own is not run", what, agent)
	}
	if err := check("agent", o.Agent); err != nil {
		return err
	}
	for _, u := range uses {
		if !u.agent {
			continue
		}
		if u.badAgent {
			return fmt.Errorf("%s must be the name of one of the session's agents", u.what)
		}
		if err := check(u.what, u.value); err != nil {
			return err
		}
	}
	return nil
}
