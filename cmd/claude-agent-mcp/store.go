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
// file into one (see the store's export format); their usage is in
// subcommands (help.go).
const storeCommand = "store"

// storeVerbs are the store command's verbs and how many arguments each
// takes after its flags (--help lists them: subcommands).
var storeVerbs = map[string]int{"export": 0, "import": 1}

// storeUsage is `store --help`: the store's lines of --help.
func storeUsage(w io.Writer) {
	fmt.Fprint(w, "usage:\n")
	writeSubcommands(w, storeCommand+" ")
}

// runStore runs `claude-agent-mcp store …` with args (after "store"): exit 0 when done, 2 for
// bad arguments, 1 when it failed.
func runStore(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if _, ok := storeVerbs[first(args)]; !ok {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			storeUsage(stdout)
			return 0
		}
		fmt.Fprint(stderr, "claude-agent-mcp store: name export or import\n")
		storeUsage(stderr)
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("store "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("store", "", "a postgres:// URL, or the path of the embedded store")
	fs.Usage = func() { storeUsage(stderr) }
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if want := storeVerbs[verb]; fs.NArg() != want {
		fmt.Fprintf(stderr, "claude-agent-mcp store %s: takes %d argument(s), got %d\n", verb, want, fs.NArg())
		storeUsage(stderr)
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
