package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// flagGroup is a heading of --help and its flags, in the order shown.
type flagGroup struct {
	title string
	names []string
}

// flagGroups orders --help. Every flag is in exactly one group
// (TestHelpGroups); one left out is still shown, under "Other".
var flagGroups = []flagGroup{
	{"Sessions", []string{"claude-path", "pass-env", "max-sessions", "query-timeout", "max-limit-wait", "default-wait", "max-result-chars",
		"heartbeat-interval", "profiles", "store", "store-recover", "state-file", "persist", "file-checkpoints"}},
	{"Policy", []string{"permission-policy", "permission-timeout", "unanswered-questions", "allowed-permission-modes", "allowed-roots",
		"allowed-tools-ceiling", "allow-session-mcp-servers", "setting-sources", "accept-no-landlock", "max-depth", "max-session-budget-usd", "max-total-budget-usd"}},
	{"Tasks (MCP tasks, for clients that take them)", []string{"tasks", "task-after", "task-ttl"}},
	{"HTTP and teams", []string{"http", "public-url", "tokens-file", "oauth-issuer", "oauth-user-claim", "oauth-scope-classes", "http-allow", "user-max-sessions", "user-max-live",
		"user-max-budget-usd", "per-user-config-dir", "share-config-dir", "http-max-sessions", "http-session-idle"}},
	{"Performance and limits", []string{"max-live", "max-queue", "warm-spares", "idle-timeout", "max-frame-bytes", "max-prompt-bytes"}},
	{"Dashboard and alerts", []string{"ui", "ui-admins", "notify"}},
	{"Agents as tools", []string{"agent-sources", "agents-dir", "agents-file", "max-agent-tools"}},
	{"Logging", []string{"log-level", "audit-log", "audit-prompts", "metrics", "metrics-tokens-file"}},
	{"Tracing (OpenTelemetry, on with OTEL_EXPORTER_OTLP_ENDPOINT)", []string{"trace-cli", "trace-prompts"}},
	{"Commands (print, then exit)", []string{"print-setup", "version"}},
}

// subcommand is a command named by the first arguments instead of flags,
// as --help and `store --help` show it.
type subcommand struct{ usage, help string }

// subcommandsTitle is the heading of the subcommands in --help and in
// docs/configuration.md (TestFlagReference).
const subcommandsTitle = "Subcommands (instead of serving)"

// subcommands are what --help lists under subcommandsTitle: every command
// run dispatches (TestHelpListsSubcommands).
var subcommands = []subcommand{
	{"store export [--store URL|PATH]", "write the session store as JSON Lines to stdout"},
	{"store import [--store URL|PATH] FILE", "read an export, or the old registry file (sessions.json), into the session store; FILE - reads stdin"},
}

// storeTarget says what a subcommand's --store names.
const storeTarget = "Their --store is a postgres:// URL or the path of the embedded store, as the server's --store (default: " +
	"$XDG_STATE_HOME/claude-agent-mcp/sessions.db, else ~/.local/state/claude-agent-mcp/sessions.db)."

// writeSubcommands writes the subcommands whose usage starts with prefix,
// then what their --store names.
func writeSubcommands(w io.Writer, prefix string) {
	for _, c := range subcommands {
		if strings.HasPrefix(c.usage, prefix) {
			fmt.Fprintf(w, "  claude-agent-mcp %s\n%s", c.usage, wrap(c.help, "      ", 80))
		}
	}
	fmt.Fprint(w, wrap(storeTarget, "  ", 80))
}

// usage prints --help: the flags under their headings, each with its
// default and its environment twin.
func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage: claude-agent-mcp [flags]

An MCP server (stdio, or streamable HTTP with --http) that runs Claude Code
sessions as sub-agents. Every setting can also be given by its environment
variable, shown in brackets; the command line wins.
`)
	shown := map[string]bool{}
	printFlag := func(f *flag.Flag) {
		shown[f.Name] = true
		typ, help := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if typ != "" {
			line += " " + typ
		}
		if !noEnvTwin[f.Name] {
			line += "  [" + envName(f.Name) + "]"
		}
		if def := defaultText(f); def != "" && !noEnvTwin[f.Name] && !strings.Contains(help, "(default") {
			help += " (default " + def + ")"
		}
		fmt.Fprintf(w, "%s\n%s", line, wrap(help, "      ", 80))
	}
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			if f := fs.Lookup(name); f != nil {
				printFlag(f)
			}
		}
	}
	fmt.Fprint(w, "  -h, --help\n      print this help and exit\n")
	fmt.Fprintf(w, "\n%s:\n", subcommandsTitle)
	writeSubcommands(w, "")
	other := false
	fs.VisitAll(func(f *flag.Flag) {
		if shown[f.Name] {
			return
		}
		if !other {
			fmt.Fprint(w, "\nOther:\n")
			other = true
		}
		printFlag(f)
	})
}

// defaultText is a flag's default as one would type it: durations
// without zero units (15m, not 15m0s).
func defaultText(f *flag.Flag) string {
	if g, ok := f.Value.(flag.Getter); ok {
		if _, ok := g.Get().(time.Duration); ok {
			d := f.DefValue
			if strings.HasSuffix(d, "m0s") {
				d = strings.TrimSuffix(d, "0s") // 15m0s → 15m
			}
			if strings.HasSuffix(d, "h0m") {
				d = strings.TrimSuffix(d, "0m") // 1h0m → 1h
			}
			return d
		}
	}
	return f.DefValue
}

// wrap breaks text into lines of at most width bytes (a longer word has a
// line of its own), each starting with indent and ending with a newline.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if line != indent && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}
