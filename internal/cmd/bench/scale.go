package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/backend"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
)

// The figures of a session store that holds many sessions (-scale): for each
// size, a server started on a store (SQLite, imported from a registry file) of that many dormant sessions, with
// one live session of its own beside them.

// scaleRow is what one registry size measured.
type scaleRow struct {
	sessions              int
	initialize            time.Duration // from the start of the process to the answer to initialize
	warmP50, warmP90      time.Duration // a warm claude_chat_query "hi"
	listP50, listP90      time.Duration // claude_session_list
	listBytes             int           // its structured content, as JSON
	rss, rssAnon, rssFile int64         // settled, after the queries
}

// scaleRounds is how many warm queries and lists each size times.
const scaleRounds = 20

// parseScale reads -scale: sizes such as "1,1000,10000".
func parseScale(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-scale: %q is not a number of sessions (1 or more)", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runScale is the -scale run: every size on SQLite, then on PostgreSQL
// with -scale-postgres.
func (b *bench) runScale(ctx context.Context) error {
	sizes, err := parseScale(b.c.scale)
	if err != nil {
		return err
	}
	rows, err := b.scale(ctx, sizes, "")
	scaleReport(os.Stdout, "SQLite", rows)
	if err != nil || b.c.scalePG == "" {
		return err
	}
	rows, err = b.scale(ctx, sizes, b.c.scalePG)
	scaleReport(os.Stdout, "PostgreSQL", rows)
	return err
}

// scale measures each size in turn, on SQLite, or on PostgreSQL when pg
// (-scale-postgres) is set.
func (b *bench) scale(ctx context.Context, sizes []int, pg string) ([]scaleRow, error) {
	var rows []scaleRow
	for _, n := range sizes {
		logf("a store of %d dormant sessions (%s)", n, cmp.Or(pg, "SQLite"))
		row, err := b.scaleOne(ctx, n, pg)
		if err != nil {
			return rows, fmt.Errorf("%d sessions: %w", n, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (b *bench) scaleOne(ctx context.Context, n int, pg string) (scaleRow, error) {
	row := scaleRow{sessions: n}
	path := filepath.Join(b.tmp, fmt.Sprintf("scale-%d.json", n))
	if err := writeRegistry(path, n, b.proj); err != nil {
		return row, err
	}
	db := filepath.Join(b.tmp, fmt.Sprintf("scale-%d.db", n))
	if pg != "" {
		var err error
		if db, err = freshDatabase(ctx, pg, fmt.Sprintf("scale_%d", n)); err != nil {
			return row, err
		}
	} else {
		os.Remove(db)
	}
	t0 := time.Now()
	if err := importRegistry(ctx, db, path); err != nil {
		return row, err
	}
	logf("imported %d sessions in %s", n, time.Since(t0).Round(time.Millisecond))
	b.serials++
	cmd := exec.Command(b.c.serverBin, "--claude-path", b.c.claude, "--log-level", "debug", "--store", db,
		"--max-sessions", strconv.Itoa(n+16), "--max-result-chars", strconv.Itoa(b.c.maxResult))
	start := time.Now()
	s, err := b.connect(ctx, fmt.Sprintf("scale-%d", n), cmd, nil)
	if err != nil {
		return row, err
	}
	row.initialize = time.Since(start)
	defer s.stop()
	id, err := s.create(ctx)
	if err != nil {
		return row, err
	}
	args := map[string]any{"sessionId": id, "prompt": "hi"}
	if _, err := s.query(ctx, "claude_chat_query", args); err != nil { // untimed: the session's first turn
		return row, err
	}
	var warm, list []time.Duration
	for range scaleRounds {
		t0 := time.Now()
		res, err := s.send(ctx, "claude_chat_query", args)
		if err != nil {
			return row, err
		}
		warm = append(warm, time.Since(t0))
		out, err := s.queryOut("claude_chat_query", res)
		if err != nil {
			return row, err
		}
		if err := wantHello("claude_chat_query", out.FinalText); err != nil {
			return row, err
		}
		t0 = time.Now()
		res, err = s.send(ctx, "claude_session_list", map[string]any{})
		if err != nil {
			return row, err
		}
		list = append(list, time.Since(t0))
		if _, ok := res.StructuredContent.(map[string]any); !ok {
			return row, fmt.Errorf("claude_session_list answered %T, want an object", res.StructuredContent)
		}
		data, _ := json.Marshal(res.StructuredContent)
		row.listBytes = len(data)
	}
	row.warmP50, row.warmP90 = pct(warm, 0.5), pct(warm, 0.9)
	row.listP50, row.listP90 = pct(list, 0.5), pct(list, 0.9)
	time.Sleep(rssSettle)
	st, err := readStatus(s.pid())
	if err != nil {
		return row, err
	}
	row.rss, row.rssAnon, row.rssFile = st["VmRSS"], st["RssAnon"], st["RssFile"]
	return row, nil
}

// writeRegistry writes a registry file of n dormant sessions in cwd, as a
// server that made them and stopped would have left it.
func writeRegistry(path string, n int, cwd string) error {
	now := time.Now().UTC()
	st := registryfile.Registry{Version: 1, Sessions: make([]registryfile.Entry, 0, n)}
	for i := range n {
		at := now.Add(-time.Duration(n-i) * time.Second)
		st.Sessions = append(st.Sessions, registryfile.Entry{
			SessionID: uuid.NewString(), ClaudeSessionID: uuid.NewString(), Resumable: true,
			Created: at, LastUsed: at, Queries: 1, CostUSD: 0.0001,
			Options: scaleOptions(cwd, i),
		})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(f).Encode(st); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// importRegistry imports the registry file at path into the session store
// at db (a SQLite path or a postgres:// URL), as `claude-agent-mcp store import` does, before the
// server starts.
func importRegistry(ctx context.Context, db, path string) error {
	st, err := backend.Open(ctx, db, "", nil)
	if err != nil {
		return err
	}
	defer st.Close()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = st.Import(ctx, f)
	return err
}

// freshDatabase makes the database name, empty, on the PostgreSQL server
// of url, and returns its URL.
func freshDatabase(ctx context.Context, url, name string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name, "CREATE DATABASE " + name} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
	}
	cfg := conn.Config()
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name), nil
}

// scaleReport writes the table of rows.
func scaleReport(w io.Writer, store string, rows []scaleRow) {
	fmt.Fprintf(w, "### A store (%s) of many dormant sessions (one live session beside them; %d warm queries and lists each)\n\n", store, scaleRounds)
	fmt.Fprintln(w, "| sessions | `initialize` after start | warm query p50 / p90 | `claude_session_list` p50 / p90 | its JSON | VmRSS (RssAnon / RssFile) |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Fprintf(w, "| %d | %s | %s / %s | %s / %s | %d B | %s (%s / %s) |\n", r.sessions, ms(r.initialize),
			ms(r.warmP50), ms(r.warmP90), ms(r.listP50), ms(r.listP90), r.listBytes, mib(r.rss), mib(r.rssAnon), mib(r.rssFile))
	}
	if len(rows) > 1 {
		first, last := rows[0], rows[len(rows)-1]
		fmt.Fprintf(w, "\nWarm query with %d sessions / with %d: %.3f (target ≤ 1.10).\n", last.sessions, first.sessions,
			float64(last.warmP50)/float64(first.warmP50))
	}
}

// scaleOptions are the options of the i-th session of a registry.
func scaleOptions(cwd string, i int) options.CreateOptions {
	o := options.CreateOptions{Cwd: cwd}
	o.Name = fmt.Sprintf("agent-%d", i)
	return o
}
