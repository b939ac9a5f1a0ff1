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

// ValidatePrompt is the rule for a prompt: it holds more than white space.
// Every query passes it (Session.Query); callers may check it earlier.
func ValidatePrompt(prompt string) error {
	if strings.TrimSpace(prompt) == "" {
		return fmt.Errorf("%w: pass the text to send to Claude Code", ErrEmptyPrompt)
	}
	return nil
}
