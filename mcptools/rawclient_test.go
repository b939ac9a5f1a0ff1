package mcptools

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/stdio"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// rawClient speaks JSON-RPC lines to a server over the stdio transport, as
// a client of protocol 2026-07-28 (no initialize; _meta on every request)
// or of an earlier protocol after initialize. The go-sdk client cannot be
// used for tasks: it knows no task results.
type rawClient struct {
	t      *testing.T
	mgr    *sessions.Manager
	in     *io.PipeWriter
	modern bool
	caps   map[string]any // the clientCapabilities every modern request carries
	hello  rawMessage     // the answer to server/discover or initialize

	mu      sync.Mutex
	nextID  int
	waiting map[string]chan rawMessage
	notes   []rawMessage
	wmu     sync.Mutex
}

type rawMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// newRawClient starts a server over the fake CLI and connects a raw client.
// protocol is "2026-07-28" (caps go in every request's _meta) or an older
// version (initialize first).
func newRawClient(t *testing.T, protocol string, caps map[string]any, cfg sessions.Config, opts Options) *rawClient {
	t.Helper()
	path, env := fakecli.Command(t)
	maps.Copy(env, cfg.Env) // the test's own, the fake's faults say
	cfg.CLIPath, cfg.Env = path, env
	mgr := sessions.NewManager(cfg)
	t.Cleanup(mgr.Shutdown)
	srv := NewServer(mgr, opts)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &rawClient{t: t, mgr: mgr, in: inW, modern: protocol >= "2026-07-28", caps: caps, waiting: map[string]chan rawMessage{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, &stdio.Transport{Reader: inR, Writer: outW})
	}()
	go c.readLoop(bufio.NewReaderSize(outR, 1<<20))
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop")
		}
	})
	if c.modern {
		c.hello = c.call("server/discover", map[string]any{})
	} else {
		c.hello = c.call("initialize", map[string]any{"protocolVersion": protocol, "capabilities": caps, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
		c.notify("notifications/initialized", map[string]any{})
	}
	return c
}

func (c *rawClient) readLoop(r *bufio.Reader) {
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m rawMessage
		if json.Unmarshal(line, &m) != nil {
			c.t.Errorf("the server wrote a line that is not JSON: %q", line)
			continue
		}
		c.mu.Lock()
		if m.Method != "" {
			c.notes = append(c.notes, m)
			c.mu.Unlock()
			continue
		}
		ch := c.waiting[string(m.ID)]
		delete(c.waiting, string(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (c *rawClient) write(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to the server: %v", err)
	}
}

func (c *rawClient) notify(method string, params map[string]any) {
	c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// send sends a request and returns the channel its response comes on.
func (c *rawClient) send(method string, params map[string]any) <-chan rawMessage {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if c.modern {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "raw", "version": "1"}
		meta["io.modelcontextprotocol/clientCapabilities"] = c.caps
		params["_meta"] = meta
	}
	c.mu.Lock()
	c.nextID++
	id := strconv.Itoa(c.nextID)
	ch := make(chan rawMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	c.write(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	return ch
}

// call sends a request and waits for its response.
func (c *rawClient) call(method string, params map[string]any) rawMessage {
	c.t.Helper()
	return c.await(c.send(method, params), method)
}

func (c *rawClient) await(ch <-chan rawMessage, what string) rawMessage {
	c.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s: no response within 30 s", what)
	}
	return rawMessage{}
}

// result decodes a successful response's result into a map.
func (c *rawClient) result(m rawMessage) map[string]any {
	c.t.Helper()
	if m.Error != nil {
		c.t.Fatalf("JSON-RPC error %d: %s", m.Error.Code, m.Error.Message)
	}
	var out map[string]any
	if err := json.Unmarshal(m.Result, &out); err != nil {
		c.t.Fatalf("result %s: %v", m.Result, err)
	}
	return out
}

// tool calls a tool and returns the decoded result.
func (c *rawClient) tool(name string, args map[string]any) map[string]any {
	c.t.Helper()
	return c.result(c.call("tools/call", map[string]any{"name": name, "arguments": args}))
}

// structured returns a CallToolResult's structuredContent.
func structured(res map[string]any) map[string]any {
	sc, _ := res["structuredContent"].(map[string]any)
	return sc
}

var tasksCaps = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "extensions": map[string]any{TasksExtension: map[string]any{}}}
