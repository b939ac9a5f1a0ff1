package mcptools

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

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/jsonenc"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/ndjson"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// DefaultMaxFrameBytes caps one inbound JSON-RPC line on stdio.
const DefaultMaxFrameBytes = 64 << 20

// StdioTransport is the server's stdio transport. Unlike the SDK's, it
// parses every line itself before the SDK sees it, so that no frame ends
// the server: a line that is not JSON is answered -32700, one that is not a
// JSON-RPC 2.0 message (or an empty batch, or a line over the frame limit)
// -32600 with its id when one can be read, and serving goes on.
type StdioTransport struct {
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
func (t *StdioTransport) InputClosed() <-chan struct{} {
	t.eofOnce.Do(func() { t.eof = make(chan struct{}) })
	return t.eof
}

// Connect implements [mcp.Transport]. It may be called once.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	t.InputClosed()
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limit := t.MaxFrameBytes
	if limit <= 0 {
		limit = DefaultMaxFrameBytes
	}
	c := &frameConn{w: t.Writer, log: log, incoming: make(chan jsonrpc.Message), readErr: make(chan error, 1), closed: make(chan struct{})}
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
	readErr   chan error
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *frameConn) readLoop(br *bufio.Reader, limit int, eof chan struct{}) {
	defer close(eof)
	for {
		line, err := ndjson.ReadLine(br, limit)
		msg, reply := vetFrame(line, errors.Is(err, ndjson.ErrTooLong), limit)
		if reply != nil {
			c.log.Warn("refused an inbound frame", "bytes", len(line), "reply", textcut.Cut(string(reply), 300))
			if werr := c.writeRaw(reply); werr != nil {
				c.readErr <- werr
				return
			}
		}
		if msg != nil {
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
			c.readErr <- err
			return
		}
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

// Read implements [mcp.Connection].
func (c *frameConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case err := <-c.readErr:
		c.readErr <- err // every later Read sees it too
		return nil, err
	case <-c.closed:
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements [mcp.Connection].
func (c *frameConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	fixErrorCode(msg)
	data, ok := encodeResult(msg)
	if !ok {
		var err error
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return fmt.Errorf("encoding a JSON-RPC message: %w", err)
		}
	}
	return c.writeRaw(data)
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
		if id, err = jsonenc.Marshal(v); err != nil {
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
