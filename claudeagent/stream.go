package claudeagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/ndjson"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

func (p *Process) readStdout(r io.Reader) {
	defer close(p.readerDone)
	// 16 KiB: a live process keeps its reader between turns, and most lines
	// are short; a longer one is gathered in pieces (ndjson.ReadLine) at
	// about a tenth more time for a 2 MB line than with 64 KiB.
	br := bufio.NewReaderSize(r, 16<<10)
	max := p.opts.maxLineBytes()
	for {
		if p.skipPartial(br) {
			continue
		}
		line, err := ndjson.ReadLine(br, max)
		if errors.Is(err, ndjson.ErrTooLong) {
			p.log.Warn("skipping a stdout line longer than the cap", "max_bytes", max)
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			p.dispatch(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.Debug("reading claude stdout", "err", err)
			}
			return
		}
	}
}

// skipPartial skips the next line, unread and uncopied, when it is a
// stream_event nobody keeps (KeepPartials) and its front is buffered
// already (the CLI writes a line at once; a line whose front is not there
// yet goes the usual way, to dispatch, which drops it too). It reports
// whether it skipped one.
func (p *Process) skipPartial(br *bufio.Reader) bool {
	if p.partials.Load() || br.Buffered() < len(streamEventPrefix) {
		return false
	}
	if head, _ := br.Peek(len(streamEventPrefix)); !bytes.Equal(head, streamEventPrefix) {
		return false
	}
	for {
		if _, err := br.ReadSlice('\n'); !errors.Is(err, bufio.ErrBufferFull) {
			return err == nil // an error: ReadLine next meets it again
		}
	}
}

// dispatch decodes a line that ndjson.ReadLine returned (its own slice,
// kept by the message) and hands it on.
func (p *Process) dispatch(line []byte) {
	if !p.partials.Load() && bytes.HasPrefix(line, streamEventPrefix) {
		return // nobody follows the text: dropped undecoded
	}
	msg, err := decodeOwned(line)
	if err != nil {
		p.log.Warn("skipping a stdout line that is not stream-json", "err", err, "line", textcut.Cut(string(line), 200))
		return
	}
	if raw, ok := msg.(*RawMessage); ok && strings.HasPrefix(raw.MsgType, "control_") {
		p.handleControl(raw)
		return
	}
	p.queue.push(msg)
}

// streamEventPrefix opens every stream_event line, as the CLI writes it.
var streamEventPrefix = []byte(`{"type":"stream_event"`)

// KeepPartials says whether the stream_event lines of a process started
// with IncludePartialMessages are decoded and queued (Next returns them;
// the default) or dropped as they are read, recognised from the front of
// the line and never decoded: a caller turns them off while nobody follows
// a turn's text as it streams, so that the deltas cost next to nothing.
func (p *Process) KeepPartials(keep bool) { p.partials.Store(keep) }

func (p *Process) handleControl(raw *RawMessage) {
	var env controlEnvelope
	if err := json.Unmarshal(raw.Raw(), &env); err != nil {
		p.log.Warn("skipping a malformed control message", "err", err)
		return
	}
	switch env.Type {
	case "control_response":
		if env.Response == nil {
			p.log.Warn("control_response without response")
			return
		}
		p.mu.Lock()
		ch := p.pending[env.Response.RequestID]
		p.mu.Unlock()
		if ch == nil {
			p.log.Debug("control_response for no pending request", "request_id", env.Response.RequestID)
			return
		}
		r := controlResult{payload: env.Response.Response}
		if len(bytes.TrimSpace(r.payload)) == 0 || string(r.payload) == "null" {
			r.payload = json.RawMessage("{}")
		}
		if env.Response.Subtype == "error" {
			msg := env.Response.Error
			if msg == "" {
				msg = "error without a message"
			}
			r.err = errors.New(msg)
		}
		select {
		case ch <- r:
		default: // a duplicate answer; the first one counts
		}
	case "control_request":
		var sub envelope
		_ = json.Unmarshal(env.Request, &sub)
		req := &ControlRequest{RequestID: env.RequestID, Subtype: sub.Subtype, Request: env.Request}
		ctx, cancel := context.WithCancel(p.life)
		p.mu.Lock()
		p.incoming[req.RequestID] = cancel
		p.mu.Unlock()
		go p.serveControl(ctx, cancel, req)
	case "control_cancel_request":
		p.mu.Lock()
		cancel := p.incoming[env.RequestID]
		delete(p.incoming, env.RequestID)
		p.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	default:
		p.queue.push(raw)
	}
}

// serveControl answers one control request from the CLI, exactly once,
// unless the CLI cancelled it.
func (p *Process) serveControl(ctx context.Context, cancel context.CancelFunc, req *ControlRequest) {
	defer cancel()
	payload, err := p.callHandler(ctx, req)
	p.mu.Lock()
	_, live := p.incoming[req.RequestID]
	delete(p.incoming, req.RequestID)
	p.mu.Unlock()
	if !live {
		p.log.Debug("control request cancelled by claude; not answering", "subtype", req.Subtype, "request_id", req.RequestID)
		return
	}
	resp := map[string]any{"request_id": req.RequestID}
	if err != nil {
		resp["subtype"] = "error"
		resp["error"] = err.Error()
	} else {
		resp["subtype"] = "success"
		if payload == nil {
			payload = map[string]any{}
		}
		resp["response"] = payload
	}
	if werr := p.writeJSON(map[string]any{"type": "control_response", "response": resp}); werr != nil {
		p.log.Debug("answering control request", "subtype", req.Subtype, "err", werr)
	}
}

func (p *Process) callHandler(ctx context.Context, req *ControlRequest) (payload any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("control handler panicked: %v", r)
		}
	}()
	if p.opts.OnControlRequest == nil {
		//lint:ignore ST1005 the CLI's own wording for a subtype it does not serve; the text goes back to the CLI
		return nil, fmt.Errorf("Unsupported control request subtype: %s", req.Subtype)
	}
	payload, err = p.opts.OnControlRequest(ctx, req)
	if errors.Is(err, ErrUnsupportedControl) {
		//lint:ignore ST1005 as above
		err = fmt.Errorf("Unsupported control request subtype: %s", req.Subtype)
	}
	return payload, err
}

func (p *Process) readStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, 4<<10)
	for {
		line, err := ndjson.ReadLine(br, 64<<10)
		if s := strings.TrimRight(string(line), "\r\n"); s != "" {
			p.stderr.add(s)
			p.log.Debug("claude stderr", "line", textcut.Cut(s, 500))
		}
		if err != nil && !errors.Is(err, ndjson.ErrTooLong) {
			return
		}
	}
}

// tailBuffer keeps the last max lines written.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, textcut.Cut(line, 2000))
	if len(t.lines) > t.max {
		t.lines = append(t.lines[:0], t.lines[len(t.lines)-t.max:]...)
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// msgQueue is an unbounded FIFO: the reader never blocks on a slow
// consumer, so control responses are always read.
type msgQueue struct {
	mu     sync.Mutex
	items  []Message
	closed bool
	ready  chan struct{} // has a token while items or closed
}

func (q *msgQueue) init() { q.ready = make(chan struct{}, 1) }

func (q *msgQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *msgQueue) push(m Message) {
	q.mu.Lock()
	q.items = append(q.items, m)
	q.mu.Unlock()
	q.signal()
}

func (q *msgQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *msgQueue) pop(ctx context.Context) (Message, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			m := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			more := len(q.items) > 0 || q.closed
			q.mu.Unlock()
			if more {
				q.signal()
			}
			return m, nil
		}
		if q.closed {
			q.mu.Unlock()
			q.signal()
			return nil, io.EOF
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
