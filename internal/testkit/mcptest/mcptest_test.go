package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect serves a server whose tool "notify" sends a progress
// notification and a log message per step, and connects r to it.
func connect(t *testing.T, r *Recorder, protocol string) *mcp.ClientSession {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	type args struct {
		Steps int `json:"steps"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "notify"}, func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		for i := range a.Steps {
			msg := fmt.Sprintf("step %d", i)
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Message: msg, Progress: float64(i)}); err != nil {
				return nil, nil, err
			}
			//lint:ignore SA1019 the recorder records logs for clients of protocols before 2026-07-28
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg}); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := r.Connect(t.Context(), ct, protocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestRecorder: notifications are recorded in arrival order, split into
// logs and progress, waited for, and forgotten by Reset.
func TestRecorder(t *testing.T) {
	r := NewRecorder("test", nil)
	cs := connect(t, r, "2025-11-25")
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "notify", Arguments: map[string]any{"steps": 3}, Meta: mcp.Meta{"progressToken": "p"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// The last log may be handled after the result.
	got, err := r.Wait(ctx, func(n []Notification) bool { return len(n) == 6 })
	if err != nil {
		t.Fatalf("Wait: %v (got %v)", err, got)
	}
	want := []string{"progress:step 0", "log:info", "progress:step 1", "log:info", "progress:step 2", "log:info"}
	if ev := r.Events(); !slices.Equal(ev, want) {
		t.Errorf("Events = %q, want %q", ev, want)
	}
	if p := r.Progress(); len(p) != 3 || p[2].Message != "step 2" || p[2].ProgressToken != "p" {
		t.Errorf("Progress = %+v", p)
	}
	if l := r.Logs(); len(l) != 3 || l[1].Data != "step 1" {
		t.Errorf("Logs = %+v", l)
	}
	if ev, err := r.WaitEvents(ctx, "step 1", "log:info"); err != nil || len(ev) != 6 {
		t.Errorf("WaitEvents = %q, %v", ev, err)
	}
	r.Reset()
	if n := r.All(); len(n) != 0 {
		t.Errorf("after Reset: %v", n)
	}
	short, cancelShort := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancelShort()
	if _, err := r.WaitEvents(short, "step 9"); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"step 9"`) {
		t.Errorf("WaitEvents for what never comes = %v", err)
	}
}

// TestRecorderWaitsForArrival: Wait returns once a notification arrives
// after it started waiting.
func TestRecorderWaitsForArrival(t *testing.T) {
	r := NewRecorder("test", nil)
	cs := connect(t, r, "2025-11-25")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := r.WaitEvents(ctx, "progress:step 1")
		errc <- err
	}()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notify", Arguments: map[string]any{"steps": 2}, Meta: mcp.Meta{"progressToken": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestToolsRecorder: a recorder from NewToolsRecorder records
// notifications/tools/list_changed on both protocol eras (on 2026-07-28
// through subscriptions/listen), in order with the other notifications;
// one from NewRecorder records none. The server sends each client a
// progress notification "before" the change, and one "after" right after
// it sent the client list_changed: a client handles its connection's
// notifications in order, so once a recorder has "after" it has handled
// list_changed, recorded or not, and the test checks all it has.
func TestToolsRecorder(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			srv, acked := toolsServer()
			tools, plain := NewToolsRecorder("tools", nil), NewRecorder("plain", nil)
			toolsSS, _ := connectTapped(t, srv, tools, protocol)
			plainSS, plainConn := connectTapped(t, srv, plain, protocol)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			modern := protocol == ""
			if modern { // the server sends the change on a stream it has acknowledged
				select {
				case <-acked:
				case <-ctx.Done():
					t.Fatalf("the tools recorder opened no subscriptions/listen stream")
				}
			}
			for _, ss := range []*mcp.ServerSession{toolsSS, plainSS} {
				if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "m", Message: "before"}); err != nil {
					t.Fatal(err)
				}
			}
			srv.AddTool(&mcp.Tool{Name: "second", InputSchema: map[string]any{"type": "object"}}, noopTool)
			if modern {
				// The server sends the change only on a subscriptions/listen
				// stream, which a plain recorder does not open: the test
				// sends it one.
				changed := &jsonrpc.Request{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)}
				if err := plainConn.Write(ctx, changed); err != nil {
					t.Fatal(err)
				}
				if err := plainSS.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "m", Message: "after"}); err != nil {
					t.Fatal(err)
				}
			}
			want := []string{"progress:before", "tools:list_changed", "progress:after"}
			if ev, err := tools.WaitEvents(ctx, "progress:after"); err != nil || !slices.Equal(ev, want) {
				t.Errorf("tools recorder: %q, %v; want %q", ev, err, want)
			}
			want = []string{"progress:before", "progress:after"}
			if ev, err := plain.WaitEvents(ctx, "progress:after"); err != nil || !slices.Equal(ev, want) {
				t.Errorf("plain recorder: %q, %v; want %q", ev, err, want)
			}
		})
	}
}

func noopTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// toolsServer is a server with a tool, whose tool list may change: right
// after it sends a session notifications/tools/list_changed it sends it a
// progress notification "after". acked is closed once it has acknowledged
// a subscriptions/listen stream (and so will send the change on it).
func toolsServer() (srv *mcp.Server, acked <-chan struct{}) {
	srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "first", InputSchema: map[string]any{"type": "object"}}, noopTool)
	ack := make(chan struct{})
	var once sync.Once
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			switch ss, _ := req.GetSession().(*mcp.ServerSession); method {
			case "notifications/subscriptions/acknowledged":
				once.Do(func() { close(ack) })
			case "notifications/tools/list_changed":
				err = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "m", Message: "after"})
			}
			return res, err
		}
	})
	return srv, ack
}

// tappedTransport is a transport that keeps its connection, so that a test
// can write on it, in order with the server's own messages.
type tappedTransport struct {
	mcp.Transport
	conn mcp.Connection
}

func (t *tappedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	t.conn = c
	return c, err
}

// connectTapped connects r to srv in memory and returns the server's
// session and its connection.
func connectTapped(t *testing.T, srv *mcp.Server, r *Recorder, protocol string) (*mcp.ServerSession, mcp.Connection) {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	tap := &tappedTransport{Transport: st}
	ss, err := srv.Connect(t.Context(), tap, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := r.Connect(t.Context(), ct, protocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return ss, tap.conn
}
