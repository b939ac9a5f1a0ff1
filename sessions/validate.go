package sessions

import (
	"fmt"
	"os"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/policy"
)

// Validate checks and normalises create options without starting anything:
// the form of each option, then the server's policy (see admit).
func (m *Manager) Validate(opts *CreateOptions) error {
	var err error
	if opts.Cwd == "" {
		if opts.Cwd, err = os.Getwd(); err != nil {
			return fmt.Errorf("getting the server's working directory: %w", err)
		}
	}
	if err := options.Validate(opts); err != nil {
		return err
	}
	_, err = m.gate(opts, policy.Change{Creating: true})
	return err
}

// The form checks live in package options; these names keep them where
// the MCP layer and the flags look for them.
var (
	// PermissionModes are the CLI's permission modes (see options).
	PermissionModes = options.PermissionModes
	// EffortLevels are the CLI's --effort values.
	EffortLevels = options.EffortLevels
	// SettingSources are the CLI's --setting-sources values.
	SettingSources = options.SettingSources
)

// ValidateModel checks the form of a model alias or id.
func ValidateModel(model string) error { return options.ValidateModel(model) }

// ValidatePermissionMode checks mode against PermissionModes; "" is valid.
func ValidatePermissionMode(mode string) error { return options.ValidatePermissionMode(mode) }

// ValidateDir checks that dir is an absolute path to an existing directory
// and returns it cleaned; what names the parameter in the error.
func ValidateDir(what, dir string) (string, error) { return options.ValidateDir(what, dir) }

// ValidateToolNames checks names of built-in tools such as Read or Bash.
func ValidateToolNames(what string, names []string) error {
	return options.ValidateToolNames(what, names)
}

// ValidAgentName reports whether name has the form of an agent name the
// options accept.
func ValidAgentName(name string) bool { return options.ValidAgentName(name) }

// ValidateEffort checks an effort level; "" is the CLI's default. A query's
// effort is checked by the query itself (Session.Query).
func ValidateEffort(effort string) error { return options.ValidateEffort(effort) }

// ValidatePrompt is the rule for a prompt: it holds more than white space.
// Every query passes it (Session.Query); callers may check it earlier.
func ValidatePrompt(prompt string) error {
	if strings.TrimSpace(prompt) == "" {
		return fmt.Errorf("%w: pass the text to send to Claude Code", ErrEmptyPrompt)
	}
	return nil
}
