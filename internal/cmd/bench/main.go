// Command bench measures the server against the real Claude Code CLI, which
// talks to the repository's fake Anthropic API (internal/testkit/fakeapi) on
// loopback with an offline environment like internal/testkit/e2eenv's:
//
//   - a warm claude_chat_query through the built server, against the same
//     turn sent to a CLI driven directly through claudeagent.Process;
//   - claude_direct_query with a matching warm spare and without one
//     (a second server with --warm-spares 0), against a cold `claude -p`;
//     and with a spare on a third server kept full (--max-live 2 with an
//     idle session), where no new spare starts while the query runs;
//   - claude_session_create with a spare and without one;
//   - the first query of a session that took a spare, against the first
//     turn of a CLI started and initialized through claudeagent.Process
//     just before (what a spare can save is bounded by that first turn);
//   - a 2 MB answer (the fake API's BIGTEXT) through the server, against the
//     same turn through claudeagent.Process, and that finalText is capped;
//   - the server's VmRSS with 10 open sessions (4 live) on the real CLI, and
//     with 10 and 200 open sessions (most dormant) on the fake CLI
//     (internal/testkit/fakecli, the claudeagent test binary).
//
// The timed variants run interleaved: every round runs each variant once,
// in a different (seeded pseudo-random) order each round, so that load on
// the machine falls on all of them alike and no variant always follows the
// same other one. A warm-up round is run first and not counted.
// p50 and p90 are nearest-rank percentiles over the rounds. For each timed
// turn the report also splits the time at the first request that reaches
// the fake API, and subtracts the CLI's own duration_ms.
//
// Waits: for a warm spare, the server's debug log line "warm spare ready"
// (its stderr); before reading VmRSS, a settle of [rssSettle]. At the end
// the driver checks /proc for processes left with this run's API URL in
// their environment.
//
// Run from the module root: `go run ./internal/cmd/bench` (scripts/bench does).
// The CLI is $CLAUDE_BIN, else the newest pinned CLI in .tools (see
// scripts/test). The report, in Markdown, goes to stdout; progress to
// stderr. Missed targets are reported, not errors: the exit status is 1
// only when something failed.
//
// It drives the server from outside only: the built binary over MCP, as a
// client would, and the CLI through claudeagent. It must not import the
// server's own packages (sessions, mcptools).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// Settle times: the only sleeps in the driver, documented in BENCHMARKS.md.
const (
	rssSettle    = 2 * time.Second  // before reading VmRSS
	callLimit    = 2 * time.Minute  // bound for any one call or turn
	spareLimit   = 60 * time.Second // bound for a warm spare to become ready
	peerBigLimit = 30 * time.Second // bound for the TypeScript peer's 2 MB answer
)

type config struct {
	rounds       int
	claude       string
	serverBin    string
	pages        int
	fakeCLI      string
	manySessions int
	maxResult    int
	skipRSS      bool
	only         string
	peer         string
	scale        string
	scalePG      string
	// altBin and altArgs start one more spares server, timed in the same
	// rounds as the usual one (bigtext_alt, chat_alt): two builds or two
	// settings compared under the same load at the same moments.
	altBin  string
	altArgs string
}

func main() {
	var c config
	flag.IntVar(&c.rounds, "rounds", 20, "timed rounds (after one warm-up round)")
	flag.StringVar(&c.claude, "claude", os.Getenv("CLAUDE_BIN"), "the claude CLI (default $CLAUDE_BIN, else the newest CLI in .tools)")
	flag.StringVar(&c.serverBin, "server", "", "the server binary (default: go build -o into a temporary directory)")
	flag.StringVar(&c.fakeCLI, "fake-cli", "", "the fake CLI, the claudeagent test binary (default: go test -c into a temporary directory)")
	flag.IntVar(&c.manySessions, "sessions", 200, "open sessions for the second RSS figure (fake CLI)")
	flag.IntVar(&c.maxResult, "max-result-chars", 60000, "--max-result-chars of the servers (the product's default)")
	flag.BoolVar(&c.skipRSS, "skip-rss", false, "skip the RSS figures")
	flag.IntVar(&c.pages, "pages", 0, "with each RSS figure, print the N packages with the most bytes in the server binary's resident pages (Linux)")
	flag.StringVar(&c.only, "only", "", "run only these timed figures (comma-separated keys such as chat_server,chat_cli)")
	flag.StringVar(&c.peer, "peer", "", "the TypeScript peer's dist/cli.js (npm claude-agent-mcp, run with node; default: "+peerPath+" when it exists; none: without the peer)")
	flag.StringVar(&c.scale, "scale", "", "only the figures of a registry of many dormant sessions, for these sizes (such as 1,1000,10000)")
	flag.StringVar(&c.altBin, "alt-server", "", "a second server binary, started like the spares server and timed in the same rounds (figures bigtext_alt, chat_alt; \"same\": the -server binary)")
	flag.StringVar(&c.altArgs, "alt-args", "", "more flags for the -alt-server, space-separated (such as --persist=false)")
	flag.StringVar(&c.scalePG, "scale-postgres", "", "with -scale: also on PostgreSQL, a fresh database per size made on the server of this URL (its user may create databases)")
	pooled := flag.Bool("pool", false, "only pool the raw samples of the bench reports named as arguments and print their ratios (see pool.go), then exit")
	pagesOf := flag.Int("pages-of", 0, "only print where the resident pages of the running server with this pid come from (-server names its binary; -pages how many packages) and exit")
	flag.Parse()
	if *pooled {
		if err := pool(os.Stdout, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *pagesOf > 0 {
		out, err := memoryMap(*pagesOf, c.serverBin, cmp.Or(c.pages, 40))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Print(out)
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func run(c config) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		return err
	}
	if c.claude == "" {
		c.claude = filepath.Join(root, e2eenv.InstalledCLI)
	}
	if _, err := os.Stat(c.claude); err != nil {
		return fmt.Errorf("no claude CLI at %s (run scripts/test once to install the pinned CLIs into .tools, or set CLAUDE_BIN): %w", c.claude, err)
	}
	switch c.peer {
	case "none":
		c.peer = ""
	case "":
		if _, err := os.Stat(filepath.Join(root, peerPath)); err == nil {
			c.peer = filepath.Join(root, peerPath)
		}
	}
	tmp, err := os.MkdirTemp("", "claude-agent-mcp-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if c.serverBin == "" {
		c.serverBin = filepath.Join(tmp, "claude-agent-mcp")
		logf("building the server")
		if err := goCmd(ctx, root, "build", "-o", c.serverBin, "./cmd/claude-agent-mcp"); err != nil {
			return err
		}
	}
	if c.scale != "" {
		c.skipRSS = true // the scale figures need no fake CLI
	}
	if c.fakeCLI == "" && !c.skipRSS {
		c.fakeCLI = filepath.Join(tmp, "fakeclaude")
		logf("building the fake CLI")
		if err := goCmd(ctx, root, "test", "-c", "-o", c.fakeCLI, "./claudeagent/"); err != nil {
			return err
		}
	}
	version, err := output(ctx, c.claude, "--version")
	if err != nil {
		return fmt.Errorf("claude --version: %w", err)
	}
	api, err := fakeapi.Start()
	if err != nil {
		return err
	}
	defer api.Close()
	b := &bench{c: c, tmp: tmp, api: api, env: e2eenv.OfflineEnv(filepath.Join(tmp, "home"), api.URL()), results: map[string][]time.Duration{},
		toAPI: map[string][]time.Duration{}, apiReqs: map[string]int{}, outside: map[string][]time.Duration{}, extra: map[string][]time.Duration{}}
	api.SetHandler(b.apiLog.handle)
	b.proj = filepath.Join(tmp, "proj")
	for _, d := range []string{b.proj, b.env["HOME"]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	defer func() {
		if lerr := b.checkLeftovers(); lerr != nil && err == nil {
			err = lerr
		}
	}()
	if c.scale != "" {
		return b.runScale(ctx)
	}
	if err := b.timed(ctx); err != nil {
		return err
	}
	if !c.skipRSS {
		if err := b.rss(ctx); err != nil {
			return err
		}
	}
	b.report(os.Stdout, strings.TrimSpace(version))
	return nil
}

// peerPath is where scripts/bench installs the TypeScript peer.
const peerPath = ".tools/peer/node_modules/claude-agent-mcp/dist/cli.js"

// goCmd runs the go command in dir, with CGO_ENABLED=0: the server is
// built as the README installs it.
func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}

// environ is the inherited environment without the server's own settings
// and CLAUDECODE, with env on top.
func environ(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := env[k]; over || strings.HasPrefix(k, "CLAUDE_AGENT_MCP_") || k == "CLAUDECODE" {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

type bench struct {
	c    config
	tmp  string
	api  *fakeapi.Server
	env  map[string]string
	proj string

	results map[string][]time.Duration
	toAPI   map[string][]time.Duration // from the start of the timed part to the first API request
	apiReqs map[string]int             // API requests during the timed parts
	span    [2]time.Time               // the last timed part
	cliMs   int64                      // the CLI's duration_ms of the last timed turn, or -1
	outside map[string][]time.Duration // wall time minus the CLI's duration_ms
	extra   map[string][]time.Duration // untimed diagnostics, by name (warm-up round dropped)
	apiLog  apiRecorder
	notes   []string
	rssRows [][6]string
	bigInfo string
	rss10   int64
	rss10At int64 // the same, read at once after the tenth session's query
	serials int
}
