package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/backend"
)

// storeCommand, as the first argument, runs the session store's command:
// export a session store as JSON Lines, or import an export or a registry
// file into one (see the store's export format).
//
//	claude-agent-mcp store export [--store URL|PATH]
//	claude-agent-mcp store import [--store URL|PATH] FILE   (FILE "-": stdin)
//
// --store is a postgres:// URL or the path of the embedded store; by
// default $XDG_STATE_HOME/claude-agent-mcp/sessions.db (else
// ~/.local/state/claude-agent-mcp/sessions.db), beside the registry file.
const storeCommand = "store"

const storeUsage = `usage:
  claude-agent-mcp store export [--store URL|PATH]         write the store as JSON Lines to stdout
  claude-agent-mcp store import [--store URL|PATH] FILE    read an export or a registry file (sessions.json; - for stdin)

--store is a postgres:// URL or the path of the embedded store (default:
$XDG_STATE_HOME/claude-agent-mcp/sessions.db, else ~/.local/state/claude-agent-mcp/sessions.db).
`

// runStore runs `claude-agent-mcp store …` with args (after "store"): exit 0 when done, 2 for
// bad arguments, 1 when it failed.
func runStore(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "export" && args[0] != "import") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, storeUsage)
			return 0
		}
		fmt.Fprint(stderr, "claude-agent-mcp store: name export or import\n", storeUsage)
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("store "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("store", "", "a postgres:// URL, or the path of the embedded store")
	fs.Usage = func() { fmt.Fprint(stderr, storeUsage) }
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	want := map[string]int{"export": 0, "import": 1}[verb]
	if fs.NArg() != want {
		fmt.Fprintf(stderr, "claude-agent-mcp store %s: takes %d argument(s), got %d\n%s", verb, want, fs.NArg(), storeUsage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runStoreVerb(ctx, verb, *target, fs.Args(), stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "claude-agent-mcp store %s: %v\n", verb, err)
		return 1
	}
	return 0
}

func runStoreVerb(ctx context.Context, verb, target string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := backend.Open(ctx, target, "", log)
	if err != nil {
		return err
	}
	defer s.Close()
	if verb == "export" {
		return s.Export(ctx, stdout)
	}
	in := stdin
	if args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	st, err := s.Import(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "imported %d sessions, %d closed sessions, %d sums\n", st.Sessions, st.Tombstones, st.Sums)
	return nil
}
