package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is one claude-agent-mcp process driven by the go-sdk client.
type server struct {
	once sync.Once
	name string
	cmd  *exec.Cmd
	cs   *mcp.ClientSession
	log  *logWatch
	peer bool // the TypeScript peer: its results carry no status
}

// logWatch keeps the server's stderr (debug level) and counts the
// "warm spare ready" lines.
type logWatch struct {
	mu      sync.Mutex
	partial []byte
	tail    []string
	spares  int
	changed chan struct{}
	file    *os.File
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.file.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		w.tail = append(w.tail, line)
		if len(w.tail) > 30 {
			w.tail = w.tail[1:]
		}
		if strings.Contains(line, "warm spare ready") {
			w.spares++
			close(w.changed)
			w.changed = make(chan struct{})
		}
	}
	return len(p), nil
}

// sparesReady returns how many "warm spare ready" lines were logged.
func (w *logWatch) sparesReady() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spares
}

// waitSpares waits until at least n "warm spare ready" lines were logged.
func (w *logWatch) waitSpares(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, spareLimit)
	defer cancel()
	for {
		w.mu.Lock()
		got, ch := w.spares, w.changed
		w.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for warm spare #%d: %w", n, ctx.Err())
		}
	}
}

func (w *logWatch) lastLines() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.tail, "\n")
}

// startServer starts the built server in b.proj with the CLI at claude,
// the offline environment plus extra, and args after the common flags.
func (b *bench) startServer(ctx context.Context, name, claude string, extra map[string]string, args ...string) (*server, error) {
	return b.startServerBin(ctx, b.c.serverBin, name, claude, extra, args...)
}

// startServerBin is startServer with the binary bin.
func (b *bench) startServerBin(ctx context.Context, bin, name, claude string, extra map[string]string, args ...string) (*server, error) {
	// A session store of its own: servers sharing the default one under
	// the common HOME would be instances sharing a store (each one's writes
	// waking the others' watches), not the one server a figure measures.
	store := filepath.Join(b.tmp, fmt.Sprintf("store-%d-%s.db", b.serials+1, name))
	cmd := exec.Command(bin, append([]string{"--claude-path", claude, "--log-level", "debug",
		"--store", store, "--max-result-chars", strconv.Itoa(b.c.maxResult)}, args...)...)
	return b.connect(ctx, name, cmd, extra)
}

// startPeer starts the TypeScript peer (npm claude-agent-mcp, run by
// node) in b.proj. It finds the CLI as `claude` on its PATH: a directory
// with a link named claude to b.c.claude comes first.
func (b *bench) startPeer(ctx context.Context) (*server, error) {
	bin := filepath.Join(b.tmp, "peer-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	link := filepath.Join(bin, "claude")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(b.c.claude, link); err != nil {
			return nil, err
		}
	}
	s, err := b.connect(ctx, "peer", exec.Command("node", b.c.peer), map[string]string{"PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH")})
	if s != nil {
		s.peer = true
	}
	return s, err
}

// connect starts cmd in b.proj with the offline environment plus extra,
// its stderr kept in a log file, and connects the go-sdk client to it.
func (b *bench) connect(ctx context.Context, name string, cmd *exec.Cmd, extra map[string]string) (*server, error) {
	b.serials++
	cmd.Dir = b.proj
	env := maps.Clone(b.env)
	maps.Copy(env, extra)
	cmd.Env = environ(env)
	f, err := os.Create(filepath.Join(b.tmp, fmt.Sprintf("server-%d-%s.log", b.serials, name)))
	if err != nil {
		return nil, err
	}
	w := &logWatch{changed: make(chan struct{}), file: f}
	cmd.Stderr = w
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 15 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return nil, fmt.Errorf("connecting to the %s server: %w\n%s", name, err, w.lastLines())
	}
	return &server{name: name, cmd: cmd, cs: cs, log: w}, nil
}

// stop closes the client: the server sees stdin end, stops its sessions
// and exits (the transport signals and then kills it if it does not).
// It may be called more than once.
func (s *server) stop() {
	s.once.Do(func() {
		if err := s.cs.Close(); err != nil {
			logf("%s server: closing: %v", s.name, err)
		}
		s.log.file.Close()
	})
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// call calls a tool and decodes its structured result into out.
func (s *server) call(ctx context.Context, tool string, args map[string]any, out any) error {
	res, err := s.send(ctx, tool, args)
	if err != nil || out == nil {
		return err
	}
	return decodeOut(res, out)
}

// send is a tool call and its answer as the MCP client decoded it: what a
// host waits for, and all that the timed figures time. Turning the
// structured content into the bench's own types (decodeOut, a JSON round
// trip of the whole answer) is the bench's business and comes after.
func (s *server) send(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s on the %s server: %w\n%s", tool, s.name, err, s.log.lastLines())
	}
	if res.IsError {
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return nil, fmt.Errorf("%s on the %s server: tool error: %s", tool, s.name, text.String())
	}
	return res, nil
}

// decodeOut fills out from the structured content of res.
func decodeOut(res *mcp.CallToolResult, out any) error {
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

type createOut struct {
	SessionID string `json:"sessionId"`
	Active    bool   `json:"active"`
}

type queryOut struct {
	FinalText string `json:"finalText"`
	Metadata  struct {
		DurationMs int64 `json:"durationMs"` // the CLI's duration_ms
	} `json:"metadata"`
	Status    string `json:"status"`
	Error     string `json:"error"`
	SessionID string `json:"sessionId"`
}

func (s *server) create(ctx context.Context) (string, error) {
	res, err := s.send(ctx, "claude_session_create", map[string]any{})
	if err != nil {
		return "", err
	}
	return s.created(res)
}

// created is the session id of claude_session_create's answer, checked.
func (s *server) created(res *mcp.CallToolResult) (string, error) {
	var out createOut
	if err := decodeOut(res, &out); err != nil {
		return "", err
	}
	if out.SessionID == "" || !out.Active {
		return "", fmt.Errorf("claude_session_create on the %s server: %+v", s.name, out)
	}
	return out.SessionID, nil
}

func (s *server) closeSession(ctx context.Context, id string) error {
	return s.call(ctx, "claude_session_close", map[string]any{"sessionId": id}, nil)
}

func (s *server) query(ctx context.Context, tool string, args map[string]any) (queryOut, error) {
	res, err := s.send(ctx, tool, args)
	if err != nil {
		return queryOut{}, err
	}
	return s.queryOut(tool, res)
}

// queryOut is the structured answer of a query tool, checked.
func (s *server) queryOut(tool string, res *mcp.CallToolResult) (queryOut, error) {
	var out queryOut
	if err := decodeOut(res, &out); err != nil {
		return out, err
	}
	if !s.peer && (out.Status != "completed" || out.Error != "") {
		return out, fmt.Errorf("%s on the %s server: status %q, error %q", tool, s.name, out.Status, out.Error)
	}
	return out, nil
}

const hello = "Hello from fake API"

func wantHello(what, text string) error {
	if !strings.Contains(text, hello) {
		return fmt.Errorf("%s answered %q, want the fake API's greeting", what, cut(text, 200))
	}
	return nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
