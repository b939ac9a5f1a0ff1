package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// The CLI driven directly: what the server's figures are compared with.

// startCLI starts and initializes the real CLI with the options a session
// with the default options gets from the server.
func (b *bench) startCLI(ctx context.Context) (*claudeagent.Process, error) {
	return b.startCLIWith(ctx, true)
}

// startCLIWith is startCLI with or without --include-partial-messages.
// The server runs every CLI with it and drops the text deltas undecoded
// while nobody follows the text; the CLI driven directly is run the same
// way, so that the ratios measure the server. bigtext_cli_plain, without
// the flag, shows what the flag costs the CLI itself.
func (b *bench) startCLIWith(ctx context.Context, partials bool) (*claudeagent.Process, error) {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	p, err := claudeagent.Start(ctx, claudeagent.Options{
		Path: b.c.claude, Cwd: b.proj, Env: b.env, PermissionPromptStdio: true,
		SessionID: uuid.NewString(), CloseTimeout: 5 * time.Second, IncludePartialMessages: partials,
	})
	if err != nil {
		return nil, err
	}
	p.KeepPartials(false)
	if _, err := p.Initialize(ctx, claudeagent.InitializeRequest{}); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("initialize: %w (stderr: %s)", err, p.StderrTail())
	}
	return p, nil
}

// cliTurn sends prompt and waits for the turn's result.
func cliTurn(ctx context.Context, p *claudeagent.Process, prompt string) (*claudeagent.ResultMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	if err := p.SendUser(prompt); err != nil {
		return nil, err
	}
	for {
		m, err := p.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("waiting for the result: %w (stderr: %s)", err, p.StderrTail())
		}
		if r, ok := m.(*claudeagent.ResultMessage); ok {
			if r.IsError {
				return r, fmt.Errorf("turn failed: %s", r.ErrorText())
			}
			return r, nil
		}
	}
}

// coldPrint runs `claude -p hi` with the offline environment.
func (b *bench) coldPrint(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.c.claude, "-p", "hi")
	cmd.Dir = b.proj
	cmd.Env = environ(b.env)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("claude -p: %w (stderr: %s)", err, cut(stderr.String(), 500))
	}
	return wantHello("claude -p", string(out))
}
