package main

import (
	"io"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/recstore/storecmd"
)

// storeCommand, as the first argument, runs the session store's command
// (package storecmd): `store export`, `store import FILE`.
const storeCommand = "store"

// runStore runs `claude-agent-mcp store …` with the arguments after
// "store".
func runStore(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return storecmd.Run(args, stdin, stdout, stderr)
}
