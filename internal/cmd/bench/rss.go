package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// The memory figures, and the check for processes left behind.

func readStatus(pid int) (map[string]int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, " kB")), 10, 64)
		if err == nil {
			out[k] = n * 1024
		}
	}
	return out, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// openSessions creates sessions on s until it has n, each with one "hi"
// query, and returns their ids.
func openSessions(ctx context.Context, s *server, ids []string, n int) ([]string, error) {
	for len(ids) < n {
		id, err := s.create(ctx)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
		out, err := s.query(ctx, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "hi"})
		if err != nil {
			return ids, err
		}
		if err := wantHello("claude_chat_query", out.FinalText); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// measureRSS reads the server's memory at once and settled (statusTwice)
// and lists its sessions to record how many are live; it returns VmRSS
// settled and at once.
func (b *bench) measureRSS(ctx context.Context, s *server, what string) (settled, atOnce int64, err error) {
	now, st, err := b.statusTwice(ctx, s, what)
	if err != nil {
		return 0, 0, err
	}
	var list struct {
		Sessions []json.RawMessage `json:"sessions"`
		Live     int               `json:"liveProcesses"`
	}
	if err := s.call(ctx, "claude_session_list", map[string]any{}, &list); err != nil {
		return 0, 0, err
	}
	b.rssRow(fmt.Sprintf("%s: %d open sessions, %d live processes", what, len(list.Sessions), list.Live), now, st)
	return st["VmRSS"], now["VmRSS"], nil
}

// statusTwice reads s's /proc status at once (before the server's idle
// release could run), settles, and reads it again. With -pages it logs
// where this server's memory lies, both times (not the peer's: another
// binary).
func (b *bench) statusTwice(ctx context.Context, s *server, what string) (now, settled map[string]int64, err error) {
	if now, err = readStatus(s.pid()); err != nil {
		return nil, nil, err
	}
	pages := b.c.pages > 0 && !s.peer
	if pages {
		maps, err := biggestMappings(s.pid(), 12)
		if err != nil {
			return nil, nil, err
		}
		logf("%s (%s), at once: %s", s.name, what, maps)
	}
	select {
	case <-time.After(rssSettle): // documented settle time
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if settled, err = readStatus(s.pid()); err != nil {
		return nil, nil, err
	}
	if pages {
		out, err := memoryMap(s.pid(), b.c.serverBin, b.c.pages)
		if err != nil {
			return nil, nil, err
		}
		logf("%s (%s): %s", s.name, what, out)
	}
	return now, settled, nil
}

// rssRow adds a row to the RSS table.
func (b *bench) rssRow(what string, now, settled map[string]int64) {
	b.rssRows = append(b.rssRows, [6]string{what, mib(now["VmRSS"]), mib(settled["VmRSS"]),
		mib(settled["RssAnon"]), mib(settled["RssFile"]), mib(settled["VmHWM"])})
}

func (b *bench) rss(ctx context.Context) error {
	logf("RSS with 10 sessions on the real CLI")
	rs, err := b.startServer(ctx, "rss-real", b.c.claude, nil, "--max-live", "4")
	if err != nil {
		return err
	}
	defer rs.stop()
	if err := rs.log.waitSpares(ctx, 1); err != nil {
		return err
	}
	if _, _, err := b.measureRSS(ctx, rs, "real CLI, just started (the one live process is the warm spare)"); err != nil {
		return err
	}
	ids, err := openSessions(ctx, rs, nil, 10)
	if err != nil {
		return err
	}
	b.rss10, b.rss10At, err = b.measureRSS(ctx, rs, "real CLI")
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := rs.closeSession(ctx, id); err != nil {
			return err
		}
	}
	rs.stop()
	if err := b.peerRSS(ctx); err != nil {
		return err
	}

	logf("RSS with 10 and %d sessions on the fake CLI", b.c.manySessions)
	streams, err := fakecli.StreamsDir()
	if err != nil {
		return err
	}
	fake, err := b.startServer(ctx, "rss-fake", b.c.fakeCLI, map[string]string{
		fakecli.EnvVar: "1", fakecli.EnvStreams: streams, fakecli.EnvSpeed: "1000000", fakecli.PassEnvVar: fakecli.PassEnv,
	}, "--max-live", "4", "--max-sessions", strconv.Itoa(max(256, b.c.manySessions)))
	if err != nil {
		return err
	}
	defer fake.stop()
	ids, err = openSessions(ctx, fake, nil, 10)
	if err != nil {
		return err
	}
	fake10, _, err := b.measureRSS(ctx, fake, "fake CLI")
	if err != nil {
		return err
	}
	start := time.Now()
	ids, err = openSessions(ctx, fake, ids, b.c.manySessions)
	if err != nil {
		return err
	}
	took := time.Since(start)
	fakeMany, _, err := b.measureRSS(ctx, fake, "fake CLI")
	if err != nil {
		return err
	}
	n := b.c.manySessions - 10
	b.notes = append(b.notes, fmt.Sprintf("Per extra (mostly dormant) session on the fake CLI: (%s − %s) / %d = %.1f KiB; creating and querying those %d sessions took %s (%.0f ms each; each create over --max-live makes the least recently used session dormant).",
		mib(fakeMany), mib(fake10), n, float64(fakeMany-fake10)/float64(n)/1024, n, took.Round(time.Millisecond), float64(took.Milliseconds())/float64(n)))
	// The server stops the rest at shutdown (fake.stop); closing 200
	// sessions one by one adds nothing to the figures.
	_ = ids
	return nil
}

// peerRSS measures the TypeScript peer (its node process, not its CLIs)
// with 10 sessions, each of which answered one "hi" (all 10 CLIs live: it
// has no --max-live).
func (b *bench) peerRSS(ctx context.Context) error {
	if b.c.peer == "" {
		return nil
	}
	logf("RSS of the TypeScript peer with 10 sessions")
	peer, err := b.startPeer(ctx)
	if err != nil {
		return err
	}
	defer peer.stop()
	ids, err := openSessions(ctx, peer, nil, 10)
	if err != nil {
		return err
	}
	now, st, err := b.statusTwice(ctx, peer, "TypeScript peer")
	if err != nil {
		return err
	}
	b.rssRow("TypeScript peer (node): 10 open sessions, 10 live processes", now, st)
	for _, id := range ids {
		if err := peer.closeSession(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// checkLeftovers reports processes that still carry this run's API URL in
// their environment (the servers, the CLIs and everything they started).
func (b *bench) checkLeftovers() error {
	if runtime.GOOS != "linux" {
		return nil
	}
	needle := []byte("ANTHROPIC_BASE_URL=" + b.api.URL() + "\x00")
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond) // polling /proc: nothing to wait on
	defer tick.Stop()
	for {
		var left []string
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(env, needle) {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			left = append(left, fmt.Sprintf("%d %s", pid, cut(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})), 100)))
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
		}
		<-tick.C
	}
}
