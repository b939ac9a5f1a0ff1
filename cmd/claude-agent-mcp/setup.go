package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// serverName is the name the setup registers the server under.
const serverName = "claude-agent"

// printSetup writes (--print-setup) how to register this binary with
// Claude Code: the `claude mcp add` line at user scope and a .mcp.json
// entry, both with the binary's absolute path, symlinks resolved, and
// with the other flags given beside --print-setup (args: `--print-setup
// --ui on` registers the server with its dashboard on). A temporary `go
// run` build is pointed out on errw.
func printSetup(w, errw io.Writer, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating this binary: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("locating this binary: %w", err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return fmt.Errorf("locating this binary: %w", err)
	}
	type server struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	args = setupArgs(args)
	entry, err := json.Marshal(map[string]any{"mcpServers": map[string]server{serverName: {Command: exe, Args: args}}})
	if err != nil {
		return err
	}
	line := []string{shellQuote(exe)}
	for _, a := range args {
		line = append(line, shellQuote(a))
	}
	fmt.Fprintf(w, "claude mcp add --scope user %s -- %s\n\n", serverName, strings.Join(line, " "))
	fmt.Fprintf(w, "or, for one project, in its .mcp.json:\n\n%s\n\n", entry)
	fmt.Fprintln(w, "User scope and an absolute path, because a server added at local scope (the default)"+
		" only works in the directory it was added from, and the Claude Code process may not have"+
		" $(go env GOPATH)/bin on its PATH.")
	if !slices.ContainsFunc(args, isUIFlag) {
		fmt.Fprintln(w, "\nAdd --ui on (run --print-setup --ui on) to watch and steer the sessions in a browser:"+
			" the dashboard's link is in the server's log and in claude_session_list.")
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		fmt.Fprintf(errw, "claude-agent-mcp: %s is a temporary build (go run) that is gone once it exits; "+
			"install the server first (CGO_ENABLED=0 go install ./cmd/claude-agent-mcp) and run its --print-setup\n", exe)
	}
	return nil
}

// setupArgs is the command line without --print-setup: the flags the
// registered server is to run with.
func setupArgs(args []string) []string {
	out := []string{}
	for _, a := range args {
		if !isFlag(a, "print-setup") {
			out = append(out, a)
		}
	}
	return out
}

// isUIFlag reports whether a is --ui (or --ui=…), the dashboard's flag.
func isUIFlag(a string) bool { return isFlag(a, "ui") }

// isFlag reports whether the argument a is the flag name, in any of the
// spellings the flag package takes (-name, --name, with =value or not).
func isFlag(a, name string) bool {
	n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return strings.HasPrefix(a, "-") && n == name
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that are safe unquoted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
