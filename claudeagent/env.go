package claudeagent

import (
	"os"
	"slices"
	"strings"
)

// A CLI process is a tenant: it gets of the server's environment only what
// the CLI needs, by name (an allow-list), never a token, a database URL or
// a setting of the server's, whatever the operator exported. What the
// server sets on purpose (Options.Env: a profile's variables, a user's
// config directory, the operator's --pass-env names) comes on top.

// checkpointsEnv turns on file checkpoints in a CLI run by a host (both
// pinned CLIs; CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING still wins).
const checkpointsEnv = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"

// serverPrefix names the server's own variables (its flags' twins, its
// token): never in a CLI's environment, not even through Options.Env.
const serverPrefix = "CLAUDE_AGENT_MCP_"

// allowedNames are the variables of the server's environment a CLI
// inherits: the system's (paths, user, locale, terminal), the proxies and
// certificates its requests need, and the CLI's own settings that are no
// secret of the server's.
var allowedNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR",
	"FORCE_COLOR", "EDITOR", "VISUAL", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"CLAUDE_CONFIG_DIR", "CLOUD_ML_REGION", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT",
	"NODE_USE_SYSTEM_CA", "NODE_USE_ENV_PROXY",
	// The CLI's own knobs (no secret): timeouts, retries, budgets.
	"MCP_TIMEOUT", "MCP_TOOL_TIMEOUT", "MCP_CONNECT_TIMEOUT_MS", "MCP_SERVER_CONNECTION_BATCH_SIZE", "MAX_MCP_OUTPUT_TOKENS",
	"MAX_THINKING_TOKENS", "MAX_STRUCTURED_OUTPUT_RETRIES", "API_TIMEOUT_MS", "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS",
	"BASH_MAX_OUTPUT_LENGTH", "SLASH_COMMAND_TOOL_CHAR_BUDGET", "ENABLE_TOOL_SEARCH", "ENABLE_PROMPT_CACHING_1H",
	"ENABLE_PROMPT_CACHING_1H_BEDROCK", "ENABLE_ENHANCED_TELEMETRY_BETA", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
	"CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR", "USE_BUILTIN_RIPGREP", "DO_NOT_TRACK", "IS_SANDBOX",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
	"SYSTEMROOT", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "TEMP", "TMP", "COMSPEC", "PATHEXT", // Windows
}

// allowedPrefixes are families of the CLI's own variables: its credentials
// and settings (ANTHROPIC_*, CLAUDE_CODE_*, DISABLE_*), a cloud provider's
// (AWS_* for Bedrock, VERTEX_REGION_*), the locale (LC_*) and telemetry
// (OTEL_*).
var allowedPrefixes = []string{"ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_", "AWS_", "VERTEX_REGION_", "LC_", "OTEL_"}

// Allowed reports whether a CLI inherits the server's variable name.
func Allowed(name string) bool {
	if strings.HasPrefix(name, serverPrefix) {
		return false
	}
	return slices.Contains(allowedNames, name) || slices.ContainsFunc(allowedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// environ returns the child's environment: the server's variables that
// [Allowed] lets through, with CLAUDE_CODE_ENTRYPOINT, PWD, the process's
// marker and FileCheckpoints' variable set, and Env on top; never a variable of the server's own
// (CLAUDE_AGENT_MCP_*).
func (o *Options) environ(cwd, marker string) []string {
	set := map[string]string{"CLAUDE_CODE_ENTRYPOINT": Entrypoint}
	if marker != "" {
		set[MarkerEnv] = marker
	}
	if cwd != "" {
		set["PWD"] = cwd
	}
	if o.FileCheckpoints {
		set[checkpointsEnv] = "true" // what the Agent SDKs set
	}
	for k, v := range o.Env {
		set[k] = v
	}
	env := make([]string, 0, 32+len(set))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := set[k]; over || !Allowed(k) {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		if !strings.HasPrefix(k, serverPrefix) {
			env = append(env, k+"="+v)
		}
	}
	return env
}
