package main

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBinarySurvivesBadFrames drives the built server with raw lines: a
// line that is not JSON and one over the SDK's old 16 MiB limit used to end
// it; now each is answered and the next request served. (The frame table is
// in mcptools; this checks that the binary uses that transport.)
func TestBinarySurvivesBadFrames(t *testing.T) {
	t.Parallel()
	bin := serverBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--claude-path", filepath.Join(dir, "no-claude"), "--persist=false", "--log-level", "debug")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("the server did not exit after stdin closed")
		}
	}()
	out := bufio.NewReaderSize(stdout, 1<<20)
	lines := make(chan string, 8)
	go func() {
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatalf("writing: %v", err)
		}
	}
	expect := func(want ...string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the server closed stdout")
			}
			for _, w := range want {
				if !strings.Contains(l, w) {
					t.Fatalf("reply %.300s lacks %s", l, w)
				}
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("no reply containing %q", want)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	expect(`"id":1`, `"result"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`x`)
	expect(`"id":null`, `-32700`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	expect(`"id":2`, `claude_chat_query`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"pad":"` + strings.Repeat("p", 17<<20) + `"}}}`)
	expect(`"id":3`, `claude_chat_query`)
}
