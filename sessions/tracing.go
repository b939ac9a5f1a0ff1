package sessions

import (
	"context"
	"encoding/json"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tracing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// A query's spans (package tracing; nothing while tracing is off): the
// turn, "claude.turn", from the query's admission to its result, a child
// of the call that started it; under it the queue wait for a --max-live
// slot, the process start or the warm spare taken, each permission or
// question wait, each steer, the store write. The CLI started for the
// query continues the turn's trace (TRACEPARENT). Prompt text goes in a
// span only with --trace-prompts (tracing.Prompts).

// traceTurn starts the span of a query's turn.
func (s *Session) traceTurn(ctx context.Context, prompt string) (context.Context, tracing.Span) {
	if !tracing.On() {
		return ctx, tracing.Span{}
	}
	ctx, sp := tracing.Start(ctx, "claude.turn")
	sp.Str("session.id", s.ID)
	sp.Int("claude.prompt.bytes", int64(len(prompt)))
	if tracing.Prompts() {
		sp.Str("claude.prompt", prompt)
	}
	return ctx, sp
}

// endTurn ends a turn's span with its result: model, tokens, cost; an
// error result or a query that could not start fails it.
func endTurn(sp tracing.Span, r *turn.Result, err error) {
	if !sp.On() {
		return
	}
	switch {
	case err != nil:
		sp.Fail(err.Error())
	case r != nil:
		sp.Str("gen_ai.response.model", r.Model)
		sp.Str("claude.session_id", r.ClaudeSessionID)
		sp.Int("gen_ai.usage.input_tokens", r.Usage.InputTokens)
		sp.Int("gen_ai.usage.output_tokens", r.Usage.OutputTokens)
		sp.Int("gen_ai.usage.cache_read.input_tokens", r.Usage.CacheReadInputTokens)
		sp.Int("gen_ai.usage.cache_creation.input_tokens", r.Usage.CacheCreationInputTokens)
		sp.Float("claude.cost_usd", r.CostUSD)
		sp.Int("claude.num_turns", int64(r.NumTurns))
		if r.IsError {
			sp.Fail(r.ErrorText)
		}
	}
	sp.End()
}

// traced is ctx when it carries a span of the query (kept in the session
// for the steps that happen outside the query's call: permission waits,
// steers, the store write), else nil.
func traced(ctx context.Context) context.Context {
	if !tracing.FromContext(ctx).On() {
		return nil
	}
	return ctx
}

// traceStep starts a step's span under tctx (a query's trace; nil for
// none: then nothing).
func traceStep(tctx context.Context, name string) tracing.Span {
	if tctx == nil || !tracing.On() {
		return tracing.Span{}
	}
	_, sp := tracing.Start(tctx, name)
	return sp
}

// traceStart is the time a step that may not happen began (a spare
// claim); zero while tracing is off.
func traceStart() time.Time {
	if !tracing.On() {
		return time.Time{}
	}
	return time.Now()
}

// traceSpare records a warm spare taken since start.
func traceSpare(ctx context.Context, start time.Time, pid int) {
	if start.IsZero() {
		return
	}
	_, sp := tracing.StartAt(ctx, "claude.spare_claim", start)
	sp.Int("process.pid", int64(pid))
	sp.End()
}

// withTrace adds to a CLI's environment the trace context of ctx
// (TRACEPARENT, TRACESTATE): env itself while tracing is off.
func withTrace(env map[string]string, ctx context.Context) map[string]string {
	if t := tracing.CLIEnv(ctx); t != nil {
		return mergeEnv(env, t)
	}
	return env
}

// endStart ends a process start's span.
func endStart(sp tracing.Span, p *claudeagent.Process, opts claudeagent.Options, err error) {
	if !sp.On() {
		return
	}
	sp.Bool("claude.resume", opts.Resume != "")
	if err != nil {
		sp.Fail(err.Error())
	} else {
		sp.Int("process.pid", int64(p.PID()))
	}
	sp.End()
}

// tracePermission starts the span of a permission question (a question
// of the model's: AskUserQuestion) under the query's trace tctx.
func tracePermission(tctx context.Context, tool string) tracing.Span {
	name := "claude.permission_wait"
	if tool == "AskUserQuestion" {
		name = "claude.question_wait"
	}
	sp := traceStep(tctx, name)
	sp.Str("gen_ai.tool.name", tool)
	return sp
}

// endPermission ends a permission question's span with its answer.
func endPermission(sp tracing.Span, res *claudeagent.PermissionResult) {
	sp.Str("claude.permission.behavior", res.Behavior)
	sp.End()
}

// traceSteer starts the span of a message steered into the turn of tctx,
// linked to the steering call's own span (in ctx, often another trace).
func traceSteer(tctx, ctx context.Context, message string) tracing.Span {
	sp := traceStep(tctx, "claude.steer")
	if !sp.On() {
		return sp
	}
	sp.Link(ctx)
	sp.Int("claude.prompt.bytes", int64(len(message)))
	if tracing.Prompts() {
		sp.Str("claude.prompt", message)
	}
	return sp
}

// retrace points the CLI's trace context at this turn before its prompt
// goes out. The CLI reads TRACEPARENT from its environment at each turn,
// and its environment follows the flag settings' env (control request
// apply_flag_settings): so a process started before the turn (by a
// create, an earlier turn, or as a warm spare) continues this turn's
// trace too. The flag settings are merged key by key, env as a whole: a
// session whose own settings (the settings option) set env keeps them,
// and one whose settings are a file the server does not read keeps the
// trace of its process's start. Nothing while tracing is off.
func (s *Session) retrace(ctx context.Context, p *claudeagent.Process) {
	if !s.m.cfg.TraceCLI {
		return // a CLI that exports nothing has no use for it: no round trip
	}
	env := tracing.CLIEnv(ctx)
	if env == nil {
		return
	}
	s.mu.Lock()
	own, ok := settingsEnv(s.opts.Settings, s.opts.SettingsFile)
	s.mu.Unlock()
	if !ok {
		return
	}
	if _, set := env["TRACESTATE"]; !set {
		env["TRACESTATE"] = "" // not the last turn's
	}
	for k, v := range own {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := p.Control(cctx, "apply_flag_settings", map[string]any{"settings": map[string]any{"env": env}}); err != nil {
		s.log.Debug("the CLI did not take this turn's trace context; its spans stay in the trace of its start", "err", err)
	}
}

// settingsEnv is the env of a session's own settings object; ok false
// when its settings are a file (whose env the server does not know).
func settingsEnv(settings json.RawMessage, file string) (map[string]string, bool) {
	if file != "" {
		return nil, false
	}
	if len(settings) == 0 {
		return nil, true
	}
	var obj struct {
		Env map[string]string `json:"env"`
	}
	if json.Unmarshal(settings, &obj) != nil {
		return nil, false // a path (a JSON string), or not an object
	}
	return obj.Env, true
}
