// Package stdio is the server's stdio transport for the MCP Go SDK: one
// JSON-RPC message per line, every line vetted before the SDK sees it, so
// that no frame ends the server, and every request read before the end of
// input answered before the SDK hears of the end. It knows JSON-RPC and the
// SDK's Connection, nothing of the tools, sessions or the dashboard.
package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/jsonstr"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/ndjson"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// DefaultMaxFrameBytes caps one inbound JSON-RPC line on stdio.
const DefaultMaxFrameBytes = 64 << 20

// Transport is the server's stdio transport. Unlike the SDK's, it
// parses every line itself before the SDK sees it, so that no frame ends
// the server: a line that is not JSON is answered -32700, one that is not a
// JSON-RPC 2.0 message (or an empty batch, or a line over the frame limit)
// -32600 with its id when one can be read, and serving goes on.
//
// At the end of input every request already read is answered before the
// SDK hears of the end: once it has, it writes nothing more, so a request
// written just before stdin closed went unanswered. The calls the server
// made to the client (elicitation) get an error answer here at the end, as
// the client can no longer answer them, and a subscriptions/listen stream,
// which lasts as long as the connection, is cancelled (it then answers with
// its closing result).
type Transport struct {
	// Reader and Writer are stdin and stdout.
	Reader io.Reader
	Writer io.Writer
	// MaxFrameBytes caps one line (default DefaultMaxFrameBytes); a longer
	// line is drained and refused.
	MaxFrameBytes int
	Logger        *slog.Logger

	eofOnce sync.Once
	eof     chan struct{}
}

// InputClosed is closed once stdin has ended (or failed).
func (t *Transport) InputClosed() <-chan struct{} {
	t.eofOnce.Do(func() { t.eof = make(chan struct{}) })
	return t.eof
}

// Connect implements [mcp.Transport]. It may be called once.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	t.InputClosed()
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limit := t.MaxFrameBytes
	if limit <= 0 {
		limit = DefaultMaxFrameBytes
	}
	c := &frameConn{w: t.Writer, log: log, incoming: make(chan jsonrpc.Message), closed: make(chan struct{}),
		inbound: map[jsonrpc.ID]string{}, outbound: map[jsonrpc.ID]bool{}, wake: make(chan struct{}, 1)}
	go c.readLoop(bufio.NewReaderSize(t.Reader, 64<<10), limit, t.eof)
	return c, nil
}

// frameConn is one stdio connection: a goroutine reads and vets frames,
// writes are serialised.
type frameConn struct {
	w   io.Writer
	log *slog.Logger

	wmu sync.Mutex

	incoming  chan jsonrpc.Message
	closed    chan struct{}
	closeOnce sync.Once

	// What is owed when the input ends (see Transport).
	mu       sync.Mutex
	inbound  map[jsonrpc.ID]string // requests handed to the SDK and not answered yet: their methods
	outbound map[jsonrpc.ID]bool   // the server's calls to the client not answered yet
	late     []jsonrpc.Message     // made here after the end: answers to the server's calls, cancellations
	end      error                 // the input's end (io.EOF, a read or write error); nil before
	wake     chan struct{}         // a Read waiting is woken: the state above changed
}

func (c *frameConn) readLoop(br *bufio.Reader, limit int, eof chan struct{}) {
	defer close(eof)
	for {
		line, err := ndjson.ReadLine(br, limit)
		msg, reply := vetFrame(line, errors.Is(err, ndjson.ErrTooLong), limit)
		if reply != nil {
			c.log.Warn("refused an inbound frame", "bytes", len(line), "reply", textcut.Cut(string(reply), 300))
			if werr := c.writeRaw(reply); werr != nil {
				c.ended(werr)
				return
			}
		}
		if msg != nil {
			c.handed(msg) // before the end can be recorded, in this goroutine
			select {
			case c.incoming <- msg:
			case <-c.closed:
				return
			}
		}
		if err != nil && err != ndjson.ErrTooLong { // not just ErrTooLong: the end of input or a read error
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			c.ended(err)
			return
		}
	}
}

// errInputEnded answers the server's calls to the client once the client's
// input has ended.
var errInputEnded = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client closed its input (stdin), so it cannot answer"}

// ended records the end of input: the server's calls to the client are
// answered with an error, listen streams cancelled, and Read reports err
// once every request is answered.
func (c *frameConn) ended(err error) {
	c.mu.Lock()
	if c.end == nil {
		c.end = err
		for id := range c.outbound {
			c.late = append(c.late, &jsonrpc.Response{ID: id, Error: errInputEnded})
		}
		clear(c.outbound)
		for id, method := range c.inbound {
			if method == "subscriptions/listen" {
				params, _ := json.Marshal(mcp.CancelledParams{RequestID: id.Raw(), Reason: "the client closed its input (stdin)"})
				c.late = append(c.late, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
			}
		}
	}
	c.mu.Unlock()
	c.poke()
}

// poke wakes a Read waiting for the state to change.
func (c *frameConn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// owed returns what Read returns before anything from the input: an answer
// made here to a call of the server, or, once the input has ended and
// every request has been answered, the end.
func (c *frameConn) owed() (jsonrpc.Message, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.late) > 0 {
		m := c.late[0]
		c.late = c.late[1:]
		return m, true, nil
	}
	if c.end != nil && len(c.inbound) == 0 {
		return nil, true, c.end
	}
	return nil, false, nil
}

// handed notes a message about to be handed to the SDK: a request it owes
// an answer to, or the client's answer to a call of the server.
func (c *frameConn) handed(m jsonrpc.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := m.(type) {
	case *jsonrpc.Request:
		if _, dup := c.inbound[m.ID]; m.ID.IsValid() && !dup {
			c.inbound[m.ID] = m.Method // a second request with the id is answered with no id: the first's answer clears it
		}
	case *jsonrpc.Response:
		delete(c.outbound, m.ID)
	}
}

// vetFrame decides what to do with one line: deliver msg to the SDK, write
// reply, or (a blank line) neither.
func vetFrame(line []byte, tooLong bool, limit int) (msg jsonrpc.Message, reply []byte) {
	if tooLong {
		return nil, errorReply(headID(line), jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("message too large: a JSON-RPC message on stdio may be at most %d bytes", limit))
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if !json.Valid(line) || !utf8.Valid(line) {
		return nil, errorReply(nil, jsonrpc.CodeParseError, "parse error: the line is not valid UTF-8 JSON")
	}
	switch line[0] {
	case '[':
		return nil, batchReply(line)
	case '{':
	default:
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message must be an object")
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, errorReply(objectID(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	return m, nil
}

// batchReply refuses a batch: MCP has no batches since 2025-06-18. Each
// member that carries an id gets its own error so that no caller waits.
func batchReply(line []byte) []byte {
	var members []json.RawMessage
	_ = json.Unmarshal(line, &members)
	if len(members) == 0 {
		return errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: empty batch")
	}
	var replies []json.RawMessage
	for _, m := range members {
		if id := objectID(m); id != nil {
			replies = append(replies, errorReply(id, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported; send one message per line"))
		}
	}
	if len(replies) == 0 {
		return errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported; send one message per line")
	}
	out, _ := json.Marshal(replies)
	return out
}

// objectID returns the id of a JSON object when it is a string or a number.
func objectID(obj []byte) any {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return validID(m["id"])
}

func validID(raw json.RawMessage) any {
	var id any
	if json.Unmarshal(raw, &id) != nil {
		return nil
	}
	switch id.(type) {
	case string, float64:
		return json.RawMessage(raw)
	}
	return nil
}

// headID reads a top-level "id" from the head of an over-long line, token
// by token, as far as the head goes.
func headID(head []byte) any {
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil
		}
		if key == "id" {
			return validID(val)
		}
	}
	return nil
}

func errorReply(id any, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
	return out
}

func (c *frameConn) writeRaw(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// Read implements [mcp.Connection]. The end of input comes only after
// every request read before it has been answered (see Transport);
// every later Read returns it too.
func (c *frameConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if m, ok, err := c.owed(); ok {
			return m, err
		}
		select {
		case m := <-c.incoming:
			return m, nil
		case <-c.wake:
		case <-c.closed:
			return nil, mcp.ErrConnectionClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Write implements [mcp.Connection].
func (c *frameConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() && !c.calling(req.ID) {
		return nil // the input has ended: calling answered it
	}
	fixErrorCode(msg)
	data, ok := encodeResult(msg)
	var err error
	if !ok {
		data, err = jsonrpc.EncodeMessage(msg)
		if err != nil {
			err = fmt.Errorf("encoding a JSON-RPC message: %w", err)
		}
	}
	if err == nil {
		err = c.writeRaw(data)
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.answered(resp.ID) // or failed trying: it is owed no more
	}
	return err
}

// calling notes a call of the server to the client. Once the input has
// ended it is answered here with an error instead, and calling is false.
func (c *frameConn) calling(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.end == nil {
		c.outbound[id] = true
		return true
	}
	c.late = append(c.late, &jsonrpc.Response{ID: id, Error: errInputEnded})
	c.poke()
	return false
}

// answered notes the answer to request id.
func (c *frameConn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.inbound, id)
	done := c.end != nil && len(c.inbound) == 0
	c.mu.Unlock()
	if done {
		c.poke()
	}
}

// encodeResult frames a successful response around its result as it is:
// the SDK encoded the result already (compact, valid JSON), and
// jsonrpc.EncodeMessage would pass over it once more to compact it again,
// a millisecond for a query's 120 KB answer. The bytes are
// EncodeMessage's (TestEncodeResult). Anything else, and a result with a
// newline (not the SDK's), is EncodeMessage's business: false.
func encodeResult(msg jsonrpc.Message) ([]byte, bool) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 || bytes.IndexByte(resp.Result, '\n') >= 0 {
		return nil, false
	}
	var id []byte
	switch v := resp.ID.Raw().(type) {
	case int64:
		id = strconv.AppendInt(nil, v, 10)
	case string:
		var err error
		if id, err = jsonstr.Marshal(v); err != nil {
			return nil, false
		}
	default:
		return nil, false
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	out := make([]byte, 0, len(head)+len(id)+len(mid)+len(resp.Result)+2) // and '}', and writeRaw's newline
	out = append(append(append(append(out, head...), id...), mid...), resp.Result...)
	return append(out, '}'), true
}

// fixErrorCode gives a JSON-RPC error that the SDK sends with code 0 (a
// plain Go error) a code of the JSON-RPC spec: a request the session's state
// does not allow (before initialize, a second initialize) is an invalid
// request; anything else an internal error.
func fixErrorCode(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		return
	}
	var we *jsonrpc.Error
	if errors.As(resp.Error, &we) && we.Code != 0 {
		return
	}
	text := resp.Error.Error()
	code := int64(jsonrpc.CodeInternalError)
	if strings.Contains(text, "during session initialization") || strings.Contains(text, `duplicate "initialize"`) {
		code = jsonrpc.CodeInvalidRequest
	}
	resp.Error = &jsonrpc.Error{Code: code, Message: text}
}

// Close implements [mcp.Connection]. stdin cannot be unblocked portably, so
// the reading goroutine ends at the next line or at the end of input.
func (c *frameConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements [mcp.Connection].
func (c *frameConn) SessionID() string { return "" }
