package main

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// TestBadFlags: every flag and environment twin is checked before anything
// is served: a bad one exits 2 with one line naming it (flags in their
// double-dash form, a bad variable by its name) and saying what to use, and
// nothing reaches stdout.
func TestBadFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  []string // NAME=value
		want []string // in the one line, in this order
	}{
		{args: []string{"--max-sessions", "0"}, want: []string{"--max-sessions 0"}},
		{args: []string{"--max-live", "-3"}, want: []string{"--max-live -3"}},
		{args: []string{"--max-queue", "0"}, want: []string{"--max-queue 0"}},
		{args: []string{"--idle-timeout", "-5s"}, want: []string{"--idle-timeout -5s"}},
		{args: []string{"--query-timeout", "-1s"}, want: []string{"--query-timeout"}},
		{args: []string{"--permission-timeout", "0s"}, want: []string{"--permission-timeout"}},
		{args: []string{"--heartbeat-interval", "0s"}, want: []string{"--heartbeat-interval"}},
		{args: []string{"--task-after", "0s"}, want: []string{"--task-after"}},
		{args: []string{"--task-ttl", "-1h"}, want: []string{"--task-ttl"}},
		{args: []string{"--max-depth", "-1"}, want: []string{"--max-depth"}},
		{args: []string{"--max-session-budget-usd", "-1"}, want: []string{"--max-session-budget-usd"}},
		{args: []string{"--max-total-budget-usd", "-0.5"}, want: []string{"--max-total-budget-usd"}},
		{args: []string{"--max-result-chars", "0"}, want: []string{"--max-result-chars"}},
		{args: []string{"--max-frame-bytes", "10"}, want: []string{"--max-frame-bytes"}},
		{args: []string{"--max-prompt-bytes", "99999999999"}, want: []string{"--max-prompt-bytes"}},
		{args: []string{"--permission-policy", "maybe"}, want: []string{"--permission-policy maybe"}},
		{args: []string{"--unanswered-questions", "guess"}, want: []string{"--unanswered-questions guess", "use assume or deny"}},
		{args: []string{"--log-level", "loud"}, want: []string{"--log-level"}},
		{args: []string{"--allowed-permission-modes", "default,yolo"}, want: []string{"--allowed-permission-modes yolo"}},
		{args: []string{"--allowed-roots", "relative/dir"}, want: []string{"--allowed-roots entry"}},
		{args: []string{"--allowed-roots", file}, want: []string{"is not a directory"}},
		{args: []string{"--allowed-tools-ceiling", "Read,not a tool"}, want: []string{"--allowed-tools-ceiling"}},
		{args: []string{"--profiles", filepath.Join(t.TempDir(), "missing.json")}, want: []string{"--profiles"}},
		{args: []string{"--ui", "0.0.0.0:8790"}, want: []string{`invalid --ui "0.0.0.0:8790"`, "loopback only"}},
		{args: []string{"--ui", "8790"}, want: []string{`invalid --ui "8790"`, "HOST:PORT"}},
		{args: []string{"--ui-admins", "root"}, want: []string{"--ui-admins needs --ui"}},
		{args: []string{"--ui", "on", "--ui-admins", "root"}, want: []string{"--ui-admins needs --http"}},
		{args: []string{"--http", "127.0.0.1:0", "--ui", "127.0.0.1:9"}, want: []string{`invalid --ui "127.0.0.1:9"`, "use --ui on"}},
		{args: []string{"--http", "127.0.0.1:0", "--ui", "on"}, want: []string{"--ui over --http needs --tokens-file"}},
		{args: []string{"--oauth-issuer", "https://login.example.com"}, want: []string{"--oauth-issuer", "need --http"}},
		{args: []string{"--oauth-scope-classes", "a=reads-files"}, want: []string{"--oauth-scope-classes and --oauth-user-claim need --oauth-issuer"}},
		{args: []string{"--http", "127.0.0.1:0", "--oauth-issuer", "https://login.example.com"}, want: []string{"--oauth-issuer needs --public-url"}},
		{args: []string{"--http", "127.0.0.1:0", "--public-url", "https://a.example", "--oauth-issuer", "http://login.example.com"},
			want: []string{`invalid --oauth-issuer "http://login.example.com"`, "use https"}},
		{args: []string{"--http", "127.0.0.1:0", "--public-url", "agents.example", "--oauth-issuer", "https://login.example.com"},
			want: []string{"invalid --public-url agents.example", "absolute URL"}},
		{args: []string{"--http", "127.0.0.1:0", "--public-url", "https://a.example", "--oauth-issuer", "https://login.example.com",
			"--http-allow", "reads-files", "--oauth-scope-classes", "agents:run=runs-programs"},
			want: []string{"scope agents:run the class runs-programs, which --http-allow does not allow"}},
		{args: []string{"--http", "127.0.0.1:0", "--public-url", "https://a.example", "--oauth-issuer", "https://login.example.com",
			"--oauth-scope-classes", "agents:files"}, want: []string{"invalid --oauth-scope-classes agents:files", "scope=class"}},
		{args: []string{"--http", "127.0.0.1:0", "--public-url", "https://a.example", "--oauth-issuer", "https://login.example.com",
			"--http-allow", "reads-files", "--oauth-scope-classes", "a=reads-file"}, want: []string{"invalid --oauth-scope-classes reads-file", "use reads-files"}},
		{args: []string{"--metrics", "9464"}, want: []string{`invalid --metrics "9464"`, "HOST:PORT"}},
		{args: []string{"--metrics", "0.0.0.0:9464"}, want: []string{`invalid --metrics "0.0.0.0:9464"`, "loopback only", "--metrics-tokens-file"}},
		{args: []string{"--metrics-tokens-file", file}, want: []string{"--metrics-tokens-file needs --http"}},
		{args: []string{"--http", "127.0.0.1:0", "--metrics-tokens-file", file}, want: []string{"--metrics-tokens-file", "line 1", "SHA-256"}},
		{args: []string{"--http", "127.0.0.1:0", "--metrics-tokens-file", filepath.Join(t.TempDir(), "missing")}, want: []string{"reading --metrics-tokens-file"}},
		{env: []string{"CLAUDE_AGENT_MCP_METRICS=example.com:9464"}, want: []string{"invalid --metrics", "(set by CLAUDE_AGENT_MCP_METRICS)"}},
		// What the flag parser refuses: the value's kind is named.
		{args: []string{"--idle-timeout", "5"}, want: []string{`invalid --idle-timeout "5"`, "use a duration such as 30s or 15m"}},
		{args: []string{"-idle-timeout=soon"}, want: []string{`invalid --idle-timeout "soon"`, "a duration such as 30s or 15m"}},
		{args: []string{"--max-live", "many"}, want: []string{`invalid --max-live "many"`, "use a whole number such as 4"}},
		{args: []string{"--max-live", "99999999999999999999"}, want: []string{"--max-live", "a whole number", "out of range"}},
		{args: []string{"--max-total-budget-usd", "lots"}, want: []string{`invalid --max-total-budget-usd "lots"`, "use a number such as 2.5"}},
		{args: []string{"--persist=maybe"}, want: []string{`invalid --persist "maybe"`, "use true or false"}},
		{args: []string{"--persist", "false"}, want: []string{"unexpected arguments", "--persist takes true or false after '='", "--persist=false"}},
		{args: []string{"--claude-path", "false", "--persist", "false"}, want: []string{"unexpected arguments", "--persist=false"}},
		{args: []string{"--max-live", "2", "--idle-timeout"}, want: []string{"--idle-timeout needs a value: a duration such as 30s or 15m"}},
		{args: []string{"--claude-path"}, want: []string{"--claude-path needs a value"}},
		// Unknown flags: the closest existing one is suggested.
		{args: []string{"--idle-timout", "5m"}, want: []string{"unknown flag --idle-timout", "did you mean --idle-timeout?"}},
		{args: []string{"-max-lve", "3"}, want: []string{"unknown flag --max-lve", "did you mean --max-live?"}},
		{args: []string{"--versoin"}, want: []string{"did you mean --version?"}},
		{args: []string{"--log", "debug"}, want: []string{"unknown flag --log", "did you mean --log-level?"}},
		{args: []string{"--no-such-flag"}, want: []string{"unknown flag --no-such-flag (see --help)"}},
		{args: []string{"stray"}, want: []string{"unexpected arguments"}},
		// Environment twins: a value the parser refuses names the variable,
		// one that check refuses names the flag and the variable.
		{env: []string{"CLAUDE_AGENT_MCP_MAX_LIVE=-3"}, want: []string{"--max-live -3", "(set by CLAUDE_AGENT_MCP_MAX_LIVE)"}},
		{env: []string{"CLAUDE_AGENT_MCP_MAX_LIVE=lots"}, want: []string{`invalid CLAUDE_AGENT_MCP_MAX_LIVE="lots"`, "use a whole number such as 4"}},
		{env: []string{"CLAUDE_AGENT_MCP_IDLE_TIMEOUT=5"}, want: []string{`invalid CLAUDE_AGENT_MCP_IDLE_TIMEOUT="5"`, "use a duration such as 30s or 15m"}},
		{env: []string{"CLAUDE_AGENT_MCP_PERSIST=maybe"}, want: []string{`invalid CLAUDE_AGENT_MCP_PERSIST="maybe"`, "use true or false"}},
		{env: []string{"CLAUDE_AGENT_MCP_PERMISSION_POLICY=maybe"}, want: []string{"--permission-policy maybe", "(set by CLAUDE_AGENT_MCP_PERMISSION_POLICY)"}},
		{env: []string{"CLAUDE_AGENT_MCP_UNANSWERED_QUESTIONS=never"}, want: []string{"--unanswered-questions never", "(set by CLAUDE_AGENT_MCP_UNANSWERED_QUESTIONS)"}},
		{env: []string{"CLAUDE_AGENT_MCP_MAX_LIVE=lots", "CLAUDE_AGENT_MCP_TASK_TTL=x"}, want: []string{"CLAUDE_AGENT_MCP_"}}, // still one line
		// The command line wins over a bad twin, and its own error is not
		// blamed on the variable.
		{args: []string{"--max-live", "0"}, env: []string{"CLAUDE_AGENT_MCP_MAX_LIVE=lots"}, want: []string{"--max-live 0"}},
	} {
		t.Run(strings.Join(append(tc.args, tc.env...), " "), func(t *testing.T) {
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "claude-agent-mcp: ") {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line", code, stderr.String())
			}
			rest := lines[0]
			for _, want := range tc.want {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("stderr %q lacks %q (in this order: %q)", lines[0], want, tc.want)
				}
				rest = rest[i+len(want):]
			}
			if singleDash.MatchString(lines[0]) {
				t.Errorf("stderr %q names a flag with a single dash", lines[0])
			}
			if tc.env == nil && strings.Contains(lines[0], "set by") {
				t.Errorf("stderr %q blames a variable", lines[0])
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q", stdout.String())
			}
		})
	}
}

// singleDash finds a flag written the flag package's way (-max-live).
var singleDash = regexp.MustCompile(`(^|[\s(])-[a-z]`)

// TestClosestFlag: an unknown flag's suggestion is the existing flag within
// a small edit distance, or the only one it begins, else none.
func TestClosestFlag(t *testing.T) {
	fs := newFlagSet(&config{})
	for _, tc := range []struct{ in, want string }{
		{"idle-timout", "idle-timeout"},
		{"idle-timeuot", "idle-timeout"},
		{"max-lives", "max-live"},
		{"taskttl", "task-ttl"},
		{"claude-pth", "claude-path"},
		{"log", "log-level"}, // the only flag it begins
		{"max", ""},          // begins many
		{"verbose", ""},      // nothing near
		{"timeout", ""},      // nothing near enough
		{"x", ""},
	} {
		if got := closestFlag(fs, tc.in); got != tc.want {
			t.Errorf("closestFlag(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestHelp: --help prints to stdout and exits 0; every flag appears once,
// under one of the headings, with its default and, unless it is a command,
// its environment twin.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "-help"} {
		t.Run(arg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{arg}, strings.NewReader(""), &stdout, &stderr); code != 0 || stderr.Len() != 0 {
				t.Fatalf("%s: exit %d, stderr %q; want 0 and nothing", arg, code, stderr.String())
			}
			help := stdout.String()
			for _, heading := range []string{"\nSessions:\n", "\nPolicy:\n", "\nTasks", "\nHTTP and teams:\n", "\nPerformance and limits:\n", "\nLogging:\n", "\nCommands", "\n" + subcommandsTitle + ":\n"} {
				if !strings.Contains(help, heading) {
					t.Errorf("--help lacks the heading %q", strings.TrimSpace(heading))
				}
			}
			// Each flag's entry: its line, then its indented description.
			entries := map[string]string{}
			var name string
			for _, line := range strings.Split(help, "\n") {
				switch {
				case strings.HasPrefix(line, "  --"):
					name = strings.Fields(line)[0][2:]
					if _, dup := entries[name]; dup {
						t.Errorf("--%s is listed twice", name)
					}
					entries[name] = line + "\n"
				case strings.HasPrefix(line, "      ") && name != "":
					entries[name] += line + "\n"
				default:
					name = ""
				}
			}
			newFlagSet(&config{}).VisitAll(func(f *flag.Flag) {
				e, ok := entries[f.Name]
				switch {
				case !ok:
					t.Errorf("--help lacks --%s", f.Name)
				case noEnvTwin[f.Name]:
					if strings.Contains(e, "CLAUDE_AGENT_MCP_") {
						t.Errorf("--%s is a command, yet --help gives it an environment variable:\n%s", f.Name, e)
					}
				default:
					if !strings.Contains(e, "["+envName(f.Name)+"]") {
						t.Errorf("--help lacks [%s] for --%s:\n%s", envName(f.Name), f.Name, e)
					}
					if !strings.Contains(e, "(default") {
						t.Errorf("--help gives no default for --%s:\n%s", f.Name, e)
					}
				}
			})
			for _, want := range []string{"(default 15m)", "(default 64)", "(default true)", "(default deny)", "(default 1h)"} {
				if !strings.Contains(help, want) {
					t.Errorf("--help lacks %q", want)
				}
			}
			if i := strings.Index(help, "\nOther:"); i >= 0 {
				t.Errorf("--help has flags in no group (add them to flagGroups):\n%s", help[i:])
			}
		})
	}
}

// TestHelpGroups: flagGroups names every flag exactly once, and nothing
// else.
func TestHelpGroups(t *testing.T) {
	fs := newFlagSet(&config{})
	seen := map[string]string{}
	for _, g := range flagGroups {
		for _, name := range g.names {
			if fs.Lookup(name) == nil {
				t.Errorf("group %q names --%s, which is no flag", g.title, name)
			}
			if other, dup := seen[name]; dup {
				t.Errorf("--%s is in groups %q and %q", name, other, g.title)
			}
			seen[name] = g.title
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if seen[f.Name] == "" {
			t.Errorf("--%s is in no group of flagGroups", f.Name)
		}
	})
}

// TestCommandsHaveNoEnvTwin: --version and --print-setup are commands, not
// settings: their would-be environment twins, left in a serving server's
// environment, must not make it print and exit. The server behaves as
// without the variable (here: a bad flag is still reported, exit 2,
// nothing on stdout).
func TestCommandsHaveNoEnvTwin(t *testing.T) {
	for _, name := range []string{"version", "print-setup"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(envName(name), "true")
			_, fs, err := parseFlags(nil)
			if err != nil {
				t.Fatalf("parseFlags: %v", err)
			}
			if f := fs.Lookup(name); f.Value.String() != f.DefValue {
				t.Errorf("%s=true set --%s to %s", envName(name), name, f.Value)
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"--max-live", "0"}, strings.NewReader(""), &stdout, &stderr)
			if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "--max-live 0") {
				t.Errorf("with %s=true: exit %d, stdout %q, stderr %q; want exit 2 naming --max-live and no stdout", envName(name), code, stdout.String(), stderr.String())
			}
		})
	}
}

// TestQuietCleanStop: at info the log holds the server's own lines only,
// and a clean stop logs no error; the CLI's version is logged once at start.
func TestQuietCleanStop(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "claude")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '2.1.330 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := startAndStop(t, fake, nil, "claude CLI")
	for _, bad := range []string{"ERR", "server run start", "server connecting", "run cancelled"} {
		if strings.Contains(log, bad) {
			t.Errorf("the log at info holds %q:\n%s", bad, log)
		}
	}
	for _, want := range []string{"claude CLI", "version=2.1.330", "survive a restart", "serving on stdio"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// TestCLICheckAtStart: a missing claude, one older than the oldest
// supported version, or one that is not logged in is reported once at start
// with what to do — not only at the first call — and the server still
// serves and stops cleanly. A usable CLI gets no warning.
func TestCLICheckAtStart(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "claude-old")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho '2.1.100 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fake, fakeEnv := fakecli.Command(t)
	env := pairs(fakeEnv)
	for _, tc := range []struct {
		name, path string
		env        []string
		until      string   // the line to wait for
		want       []string // in the log
		warnings   int
	}{
		{"missing", filepath.Join(dir, "no-such-claude"), nil, "claude CLI",
			[]string{"WRN", "not usable", "no-such-claude", "npm install -g @anthropic-ai/claude-code", "--claude-path", "CLAUDE_AGENT_MCP_CLAUDE_PATH"}, 1},
		{"old", old, nil, "claude CLI", []string{"WRN", "older than the oldest version", "2.1.100", "2.1.197"}, 1},
		{"not logged in", fake, append(env, fakecli.EnvNotLoggedIn+"=1"), "not logged in",
			[]string{"WRN", "the claude CLI is not logged in", "claude auth login", "ANTHROPIC_API_KEY", "INF claude CLI"}, 1},
		{"logged in", fake, env, "claude CLI login", []string{"INF claude CLI", "method=api_key"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A spare would run the stand-in too.
			log := startAndStop(t, tc.path, tc.env, tc.until, "--warm-spares", "0", "--log-level", "debug")
			for _, want := range tc.want {
				if !strings.Contains(log, want) {
					t.Errorf("the log lacks %q:\n%s", want, log)
				}
			}
			if n := strings.Count(log, "WRN"); n != tc.warnings {
				t.Errorf("%d warnings, want %d:\n%s", n, tc.warnings, log)
			}
		})
	}
}

// startAndStop starts the built server with claude at claudePath and env
// added to its environment, waits for a line of the background check of
// the CLI holding until, stops the server cleanly (stdin EOF) and returns
// its stderr. args go to the server.
func startAndStop(t *testing.T, claudePath string, env []string, until string, args ...string) string {
	t.Helper()
	bin := serverBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"--claude-path", claudePath, "--store", filepath.Join(dir, "state.db")}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var log strings.Builder
	// The start-up check runs in the background: wait for its line, then
	// stop the server cleanly.
	timeout := time.After(10 * time.Second)
	for !strings.Contains(log.String(), until) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the server exited before a line with %q:\n%s", until, log.String())
			}
			log.WriteString(l + "\n")
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatalf("no line with %q:\n%s", until, log.String())
		}
	}
	in.Close()
	for l := range lines {
		log.WriteString(l + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, log.String())
	}
	return log.String()
}

// TestFlagReference: the flag reference, docs/configuration.md, has the
// headings of --help ("## " lines), each naming the flags --help lists
// under it, and no heading --help lacks.
func TestFlagReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{} // heading → its text
	for _, part := range strings.Split(string(b), "\n## ")[1:] {
		title, body, _ := strings.Cut(part, "\n")
		sections[title] = body
	}
	for _, g := range flagGroups {
		body, ok := sections[g.title]
		if !ok {
			t.Errorf("docs/configuration.md lacks the heading %q", "## "+g.title)
			continue
		}
		delete(sections, g.title)
		for _, name := range g.names {
			if !strings.Contains(body, "`--"+name+"`") {
				t.Errorf("docs/configuration.md's %q section lacks `--%s`", g.title, name)
			}
		}
	}
	body, ok := sections[subcommandsTitle]
	if !ok {
		t.Errorf("docs/configuration.md lacks the heading %q", "## "+subcommandsTitle)
	}
	delete(sections, subcommandsTitle)
	for _, c := range subcommands {
		if name := commandWords(c.usage); !strings.Contains(body, "`claude-agent-mcp "+name) {
			t.Errorf("docs/configuration.md's %q section lacks `claude-agent-mcp %s`", subcommandsTitle, name)
		}
	}
	for title := range sections {
		t.Errorf("docs/configuration.md has a heading %q that --help lacks", title)
	}
}

// commandWords is a subcommand's words in its usage line, up to its first
// flag or argument ("store export [--store URL|PATH]" → "store export").
func commandWords(usage string) string {
	var words []string
	for _, w := range strings.Fields(usage) {
		if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "-") || strings.ToUpper(w) == w {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// TestHelpListsSubcommands: --help lists every subcommand run dispatches
// (commands, with the store's verbs), under its heading, and each one it
// lists is taken (its --help exits 0).
func TestHelpListsSubcommands(t *testing.T) {
	verbs := map[string]map[string]int{storeCommand: storeVerbs} // a command's verbs
	var accepted []string
	for name := range commands {
		if vs, ok := verbs[name]; ok {
			for verb := range vs {
				accepted = append(accepted, name+" "+verb)
			}
			continue
		}
		accepted = append(accepted, name)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	_, section, ok := strings.Cut(stdout.String(), "\n"+subcommandsTitle+":\n")
	if !ok {
		t.Fatalf("--help has no heading %q:\n%s", subcommandsTitle, stdout.String())
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if usage, ok := strings.CutPrefix(line, "  claude-agent-mcp "); ok {
			listed[commandWords(usage)] = true
		}
	}
	for _, name := range accepted {
		if !listed[name] {
			t.Errorf("--help does not list the subcommand %q:\n%s", name, section)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("--help lists %q, which is no subcommand", name)
	}
	for _, name := range accepted {
		var out, errb bytes.Buffer
		if code := run(append(strings.Fields(name), "--help"), strings.NewReader(""), &out, &errb); code != 0 {
			t.Errorf("%s --help: exit %d: %s", name, code, errb.String())
		}
	}
}
