package claudeagent

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
)

// Entrypoint is the CLAUDE_CODE_ENTRYPOINT value a [Process] gets unless
// Options.Env overrides it; the CLI reports it in its User-Agent.
const Entrypoint = "claude-agent-mcp"

// MarkerEnv is the variable each [Process] gets with a value of its own, so
// that the tools it starts can be found (see [KillMarked]) when they outlive
// it.
const MarkerEnv = "CLAUDE_SUBAGENT_PROCESS"

// Defaults for the zero values of [Options].
const (
	DefaultMaxLineBytes   = 256 << 20
	DefaultControlTimeout = 60 * time.Second
	DefaultCloseTimeout   = 5 * time.Second
)

// SessionOptions are the CLI options that the user of a conversation
// chooses: model, permissions, prompts, tools, limits. They are persisted
// with a session and are the session options of the MCP tools, so their
// JSON names and descriptions are those callers see. Each maps to one flag
// in [Options.Args]; validation lives with the session manager.
type SessionOptions struct {
	Model          string `json:"model,omitempty" jsonschema:"opus, sonnet, haiku or an id"`
	PermissionMode string `json:"permissionMode,omitempty"`
	// SystemPrompt, when set, replaces Claude Code's system prompt.
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// AppendSystemPrompt is appended to the default system prompt.
	AppendSystemPrompt string `json:"appendSystemPrompt,omitempty"`
	// AllowedTools and DisallowedTools are permission rules such as "Bash"
	// or "Bash(git:*)".
	AllowedTools    []string `json:"allowedTools,omitempty" jsonschema:"Run without asking, e.g. Bash(git:*)"`
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// MaxTurns caps API round trips per user message; 0 means no cap.
	MaxTurns int `json:"maxTurns,omitempty"`
	// AddDirs are further directories the session may access.
	AddDirs []string `json:"addDirs,omitempty"`
	// Tools is the built-in tool set: nil is the CLI's default, empty none.
	Tools []string `json:"tools,omitzero" jsonschema:"Built-in tools; [] none"`
	// Effort is low, medium, high, xhigh or max (--effort).
	Effort string `json:"effort,omitempty"`
	// JSONSchema makes the final answer structured output that matches it
	// (--json-schema); the result then carries structured_output.
	JSONSchema json.RawMessage `json:"jsonSchema,omitempty" jsonschema:"Object schema of the answer: structuredOutput"`
	// MaxBudgetUSD caps this process's spending (--max-budget-usd).
	MaxBudgetUSD float64 `json:"maxBudgetUsd,omitempty"`
	// Agents defines custom sub-agents (--agents): {"name": {"description":
	// …, "prompt": …, "tools": […], "model": …}}.
	Agents json.RawMessage `json:"agents,omitempty" jsonschema:"{name: {description, prompt, tools}}"`
	// Agent is the agent that runs the session itself, one of Agents or
	// of the settings' agents (--agent).
	Agent string `json:"agent,omitempty" jsonschema:"Which of agents runs it"`
	// Settings is a settings object (--settings). A JSON string in it is
	// the path of a settings file: sessions persisted before SettingsFile
	// carry one.
	Settings json.RawMessage `json:"settings,omitempty"`
	// SettingsFile is the absolute path of a settings file (--settings).
	SettingsFile string `json:"settingsFile,omitempty" jsonschema:"Absolute path"`
	// SettingSources are the settings loaded (--setting-sources): user,
	// project, local; empty loads none; nil the CLI's default.
	SettingSources []string `json:"settingSources,omitzero" jsonschema:"[] loads none"`
	// FallbackModel is used when the model is overloaded (--fallback-model).
	FallbackModel string `json:"fallbackModel,omitempty"`
	// Name is a display name (--name).
	Name string `json:"name,omitempty"`
	// Plugins are plugin directories loaded for this session
	// (--plugin-dir, once each); a plugin runs programs.
	Plugins []string `json:"plugins,omitempty"`
}

// Options configure a [Process]. The zero value starts `claude` from PATH in
// the current directory with the CLI's defaults.
type Options struct {
	SessionOptions

	// Path is the claude binary; "" looks it up with [FindCLI].
	Path string
	// Cwd is the working directory of the CLI; "" is the current one.
	Cwd string

	// Resume continues the conversation with this Claude session id; with
	// ForkSession it continues into a new id.
	Resume      string
	ForkSession bool
	// SessionID makes the CLI use this UUID as its session id.
	SessionID string
	// MCPConfig is a JSON document ({"mcpServers":{…}}) or a file path.
	MCPConfig       string
	StrictMCPConfig bool
	// Env is added to the environment the process inherits (an
	// allow-list of the server's, see [Allowed]) and wins over it.
	Env map[string]string
	// IncludePartialMessages makes the CLI emit stream_event lines.
	IncludePartialMessages bool
	// PermissionPromptStdio routes permission questions to the host as
	// can_use_tool control requests (--permission-prompt-tool stdio).
	PermissionPromptStdio bool
	// AllowDangerouslySkipPermissions lets the session switch to
	// bypassPermissions later (--allow-dangerously-skip-permissions).
	AllowDangerouslySkipPermissions bool
	// FileCheckpoints makes the CLI keep a copy of each file before its
	// tools change it, per user message, so that [Process.RewindFiles]
	// can restore them (CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING; Env
	// still wins).
	FileCheckpoints bool
	// ExtraArgs are appended verbatim.
	ExtraArgs []string
	// Ceiling, when it restricts anything, is what the kernel lets the
	// process and everything it starts do (Landlock on Linux); [Start]
	// adds what the CLI itself needs (see [CLINeeds]) and refuses to start
	// where the kernel cannot enforce it.
	Ceiling *ceiling.Ceiling
	// Jail starts the process in a jail of its own (see package ceiling:
	// its own processes alone in /proc, no capabilities, no other
	// process's private directory); Start refuses where the kernel cannot
	// (ceiling.JailAvailable).
	Jail bool
	// Alone are directories the jailed process sees alone in their
	// parents (the project's directory of the CLI's transcripts: the other
	// projects' hidden); each must exist.
	Alone []string

	// OnControlRequest answers the CLI's control requests; nil answers every
	// one with an "unsupported" error.
	OnControlRequest ControlHandler
	// Logger receives diagnostics (stderr lines at debug, skipped lines at
	// warn); nil discards them.
	Logger *slog.Logger

	// MaxLineBytes caps one stdout line (default 256 MiB); a longer line is
	// skipped and logged.
	MaxLineBytes int
	// ControlTimeout bounds each control request (default 60 s).
	ControlTimeout time.Duration
	// CloseTimeout is how long each stage of Close waits (default 5 s).
	CloseTimeout time.Duration
	// StderrLines is how many trailing stderr lines are kept (default 40).
	StderrLines int

	private string // the process's private directory, once Start made it
}

func (o *Options) maxLineBytes() int {
	if o.MaxLineBytes > 0 {
		return o.MaxLineBytes
	}
	return DefaultMaxLineBytes
}

func (o *Options) controlTimeout() time.Duration {
	if o.ControlTimeout > 0 {
		return o.ControlTimeout
	}
	return DefaultControlTimeout
}

func (o *Options) closeTimeout() time.Duration {
	if o.CloseTimeout > 0 {
		return o.CloseTimeout
	}
	return DefaultCloseTimeout
}

// Args returns the CLI arguments for o, without the binary. A command line
// is readable by every process of the machine, so text never appears
// here: prompts go over stdin, and so do the system prompts, the agents
// and the JSON schema, in initialize (see [Process.Initialize]); the MCP
// configuration and a settings object are files in the process's private
// directory (see private.go). Values are joined to their flag
// (--flag=value), so that a value starting with a dash (a name) is never
// read as a flag, and a variadic flag never takes the next argument.
func (o *Options) Args() []string {
	args := []string{"--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}
	add := func(flag, v string) {
		if v != "" {
			args = append(args, flag+"="+v)
		}
	}
	add("--model", o.Model)
	add("--permission-mode", o.PermissionMode)
	add("--allowedTools", strings.Join(o.AllowedTools, ","))
	add("--disallowedTools", strings.Join(o.DisallowedTools, ","))
	if o.MaxTurns > 0 {
		add("--max-turns", strconv.Itoa(o.MaxTurns))
	}
	if o.Resume != "" {
		// The = form keeps an id that starts with a dash from reading as a flag.
		args = append(args, "--resume="+o.Resume)
	}
	if o.ForkSession {
		args = append(args, "--fork-session")
	}
	if o.SessionID != "" {
		args = append(args, "--session-id="+o.SessionID)
	}
	if isJSONObject(o.MCPConfig) {
		add("--mcp-config", o.document(mcpConfigFile))
	} else {
		add("--mcp-config", o.MCPConfig)
	}
	if o.StrictMCPConfig {
		args = append(args, "--strict-mcp-config")
	}
	for _, d := range o.AddDirs {
		add("--add-dir", d)
	}
	if o.Tools != nil {
		// The = form: an empty list must stay one argument.
		args = append(args, "--tools="+strings.Join(o.Tools, ","))
	}
	add("--effort", o.Effort)
	if o.MaxBudgetUSD > 0 {
		add("--max-budget-usd", strconv.FormatFloat(o.MaxBudgetUSD, 'f', -1, 64))
	}
	if raw, path := o.settingsObject(); raw != nil {
		add("--settings", o.document(settingsFile))
	} else {
		add("--settings", path) // a file
	}
	add("--settings", o.SettingsFile)
	if o.SettingSources != nil {
		args = append(args, "--setting-sources="+strings.Join(o.SettingSources, ","))
	}
	add("--agent", o.Agent)
	add("--fallback-model", o.FallbackModel)
	add("--name", o.Name)
	for _, d := range o.Plugins {
		add("--plugin-dir", d)
	}
	if o.IncludePartialMessages {
		args = append(args, "--include-partial-messages")
	}
	if o.PermissionPromptStdio {
		args = append(args, "--permission-prompt-tool", "stdio")
	}
	if o.AllowDangerouslySkipPermissions {
		args = append(args, "--allow-dangerously-skip-permissions")
	}
	return append(args, o.ExtraArgs...)
}

// compactJSON is raw as one line ("" for none).
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// Environ returns the child's environment (see environ).
func (o *Options) Environ(cwd string) []string {
	return o.environ(cwd, "")
}
