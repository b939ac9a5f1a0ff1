// Package mcptest is the MCP client of the tests: a go-sdk client that
// records the log and progress notifications it gets, in arrival order,
// and lets a test read them or wait for one; and the calls the tests of
// several packages make with it (call.go). (mcptools' rawclient_test.go
// is a different thing: raw JSON-RPC for protocol 2026-07-28.)
package mcptest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Notification is one notification as received: a log message, a
// progress notification or (for a recorder from NewToolsRecorder)
// notifications/tools/list_changed; the other fields are zero.
type Notification struct {
	//lint:ignore SA1019 the server logs to clients of protocols before 2026-07-28
	Log          *mcp.LoggingMessageParams
	Progress     *mcp.ProgressNotificationParams
	ToolsChanged bool
}

// String is "log:<level>", "progress:<message>" or "tools:list_changed".
func (n Notification) String() string {
	switch {
	case n.Log != nil:
		return "log:" + string(n.Log.Level)
	case n.ToolsChanged:
		return "tools:list_changed"
	}
	return "progress:" + n.Progress.Message
}

// Elicit answers elicitation/create.
type Elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)

// Recorder is a go-sdk client that records notifications. It is safe for
// concurrent use: the client's handlers run on its own goroutines.
type Recorder struct {
	Client *mcp.Client

	mu      sync.Mutex
	got     []Notification
	changed chan struct{} // closed (and replaced) when a notification arrives
}

// NewRecorder returns a client named name that records the notifications
// it gets; it answers elicitation with elicit (nil: the client does not
// declare the capability).
func NewRecorder(name string, elicit Elicit) *Recorder {
	return newRecorder(name, elicit, false)
}

// NewToolsRecorder is NewRecorder that also records
// notifications/tools/list_changed. On protocol 2026-07-28 its client opens
// a subscriptions/listen stream for them.
func NewToolsRecorder(name string, elicit Elicit) *Recorder {
	return newRecorder(name, elicit, true)
}

func newRecorder(name string, elicit Elicit, tools bool) *Recorder {
	r := &Recorder{changed: make(chan struct{})}
	opts := &mcp.ClientOptions{
		ElicitationHandler: elicit,
		//lint:ignore SA1019 the server logs to clients of protocols before 2026-07-28
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			r.add(Notification{Log: req.Params})
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.add(Notification{Progress: req.Params})
		},
	}
	if tools {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
			r.add(Notification{ToolsChanged: true})
		}
	}
	r.Client = mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	return r
}

// Connect connects the client over t with protocol version protocol (""
// is the SDK's newest) and asks for every log level: with logging/setLevel
// before 2026-07-28 (from then on a request asks for logs in its _meta).
func (r *Recorder) Connect(ctx context.Context, t mcp.Transport, protocol string) (*mcp.ClientSession, error) {
	cs, err := r.Client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		return nil, err
	}
	if protocol != "" {
		//lint:ignore SA1019 logging/setLevel is how clients of protocols before 2026-07-28 ask for logs
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			cs.Close()
			return nil, fmt.Errorf("setting the log level: %w", err)
		}
	}
	return cs, nil
}

func (r *Recorder) add(n Notification) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, n)
	close(r.changed)
	r.changed = make(chan struct{})
}

// All returns the notifications so far, in arrival order.
func (r *Recorder) All() []Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Notification(nil), r.got...)
}

// Logs returns the log messages so far.
//
//lint:ignore SA1019 see Notification.Log
func (r *Recorder) Logs() []*mcp.LoggingMessageParams {
	//lint:ignore SA1019 see Notification.Log
	var out []*mcp.LoggingMessageParams
	for _, n := range r.All() {
		if n.Log != nil {
			out = append(out, n.Log)
		}
	}
	return out
}

// Progress returns the progress notifications so far.
func (r *Recorder) Progress() []*mcp.ProgressNotificationParams {
	var out []*mcp.ProgressNotificationParams
	for _, n := range r.All() {
		if n.Progress != nil {
			out = append(out, n.Progress)
		}
	}
	return out
}

// Events returns the notifications so far as strings (see
// Notification.String).
func (r *Recorder) Events() []string {
	var out []string
	for _, n := range r.All() {
		out = append(out, n.String())
	}
	return out
}

// Reset forgets the notifications so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = nil
}

// Wait blocks until done, called with the notifications so far (after each
// arrival), returns true, and returns them; or until ctx ends, returning
// them with the context's error.
func (r *Recorder) Wait(ctx context.Context, done func([]Notification) bool) ([]Notification, error) {
	for {
		r.mu.Lock()
		got, changed := append([]Notification(nil), r.got...), r.changed
		r.mu.Unlock()
		if done(got) {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
}

// WaitEvents waits until, for each of want, an event (see Events)
// contains it, and returns the events so far. The client dispatches
// notifications apart from responses, so one sent before a result may be
// handled just after it. On timeout the error names the first one missing.
func (r *Recorder) WaitEvents(ctx context.Context, want ...string) ([]string, error) {
	missing := ""
	got, err := r.Wait(ctx, func(got []Notification) bool {
		missing = ""
	next:
		for _, w := range want {
			for _, n := range got {
				if strings.Contains(n.String(), w) {
					continue next
				}
			}
			missing = w
			return false
		}
		return true
	})
	events := make([]string, len(got))
	for i, n := range got {
		events[i] = n.String()
	}
	if err != nil {
		return events, fmt.Errorf("no event contains %q: %w", missing, err)
	}
	return events, nil
}
