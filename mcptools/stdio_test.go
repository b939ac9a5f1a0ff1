package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// badFrames are lines that used to end the server (issue 15), each with the
// error code and id of the reply it must get now.
var badFrames = []struct {
	name, line string
	code       int64
	id         string // the reply's id as JSON
}{
	{"not_json", `x`, jsonrpc.CodeParseError, `null`},
	{"truncated_object", `{"jsonrpc":"2.0","id":7,"method":"tools/li`, jsonrpc.CodeParseError, `null`},
	{"empty_object", `{}`, jsonrpc.CodeInvalidRequest, `null`},
	{"empty_batch", `[]`, jsonrpc.CodeInvalidRequest, `null`},
	{"batch", `[{"jsonrpc":"2.0","id":41,"method":"tools/list"}]`, jsonrpc.CodeInvalidRequest, `41`},
	{"wrong_version", `{"jsonrpc":"1.0","id":9,"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, `9`},
	{"no_version_string_id", `{"id":"abc","method":"tools/list"}`, jsonrpc.CodeInvalidRequest, `"abc"`},
	{"number", `5`, jsonrpc.CodeInvalidRequest, `null`},
	{"null", `null`, jsonrpc.CodeInvalidRequest, `null`},
	{"string", `"hello"`, jsonrpc.CodeInvalidRequest, `null`},
	{"method_not_string", `{"jsonrpc":"2.0","id":3,"method":5}`, jsonrpc.CodeInvalidRequest, `3`},
	{"object_id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, `null`},
	{"no_method_no_id", `{"jsonrpc":"2.0","params":{}}`, jsonrpc.CodeInvalidRequest, `null`},
	{"invalid_utf8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", jsonrpc.CodeParseError, `null`},
}

// stdioServer runs the server over a StdioTransport on pipes. The CLI
// path points nowhere: these tests start no process.
type stdioServer struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func newStdioServer(t *testing.T, maxFrame int) *stdioServer {
	t.Helper()
	mgr := sessions.NewManager(sessions.Config{CLIPath: filepath.Join(t.TempDir(), "no-claude")})
	srv := NewServer(mgr, Options{Version: "test"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioServer{in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { s.done <- srv.Run(ctx, &StdioTransport{Reader: inR, Writer: outW, MaxFrameBytes: maxFrame}) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			t.Error("the server did not stop")
		}
	})
	s.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if got := s.reply(t); !strings.Contains(got, `"id":"init"`) || !strings.Contains(got, `"result"`) {
		t.Fatalf("initialize: %s", got)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *stdioServer) send(t *testing.T, line string) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { _, err := io.WriteString(s.in, line+"\n"); errc <- err }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("writing to the server: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not read the line")
	}
}

// reply reads the next line the server writes.
func (s *stdioServer) reply(t *testing.T) string {
	t.Helper()
	return s.replyWithin(t, 10*time.Second)
}

// replyWithin is reply with a deadline of d, for replies to lines of tens
// of MiB (parsed under -race while other packages' tests run alongside).
func (s *stdioServer) replyWithin(t *testing.T, d time.Duration) string {
	t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() { l, err := s.out.ReadString('\n'); ch <- res{l, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("reading from the server: %v (server: %v)", r.err, s.result())
		}
		return strings.TrimSpace(r.line)
	case <-time.After(d):
		t.Fatalf("no reply within %s", d)
	}
	return ""
}

func (s *stdioServer) result() any {
	select {
	case err := <-s.done:
		return err
	default:
		return "still running"
	}
}

// checkError checks that line is a JSON-RPC error reply with code and id.
func checkError(t *testing.T, line string, code int64, id string) {
	t.Helper()
	var r struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.Version != "2.0" || r.Error == nil {
		t.Fatalf("not a JSON-RPC error reply: %s", line)
	}
	if r.Error.Code != code || string(r.ID) != id || r.Error.Message == "" {
		t.Errorf("reply %s: want code %d, id %s", line, code, id)
	}
}

// TestBadFramesKeepServing feeds every frame that used to end the server and
// checks its reply and that the next request is answered.
func TestBadFramesKeepServing(t *testing.T) {
	s := newStdioServer(t, 0)
	for i, bf := range badFrames {
		t.Run(bf.name, func(t *testing.T) {
			s.send(t, bf.line)
			got := s.reply(t)
			if bf.name == "batch" {
				var arr []json.RawMessage
				if json.Unmarshal([]byte(got), &arr) != nil || len(arr) != 1 {
					t.Fatalf("batch reply %s: want an array of one error", got)
				}
				got = string(arr[0])
			}
			checkError(t, got, bf.code, bf.id)
			s.send(t, `{"jsonrpc":"2.0","id":`+jsonInt(1000+i)+`,"method":"tools/list"}`)
			if next := s.reply(t); !strings.Contains(next, `"id":`+jsonInt(1000+i)) || !strings.Contains(next, `"claude_chat_query"`) {
				t.Fatalf("tools/list after %s: %.300s", bf.name, next)
			}
		})
	}
	// Blank lines are skipped without a reply.
	s.send(t, "  ")
	s.send(t, `{"jsonrpc":"2.0","id":"after-blank","method":"tools/list"}`)
	if next := s.reply(t); !strings.Contains(next, `"id":"after-blank"`) {
		t.Fatalf("after a blank line: %.300s", next)
	}
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestOversizedFrame: a line over the frame limit is drained and answered
// with its id; a line just under it is served.
func TestOversizedFrame(t *testing.T) {
	const limit = 64 << 10
	s := newStdioServer(t, limit)
	pad := func(n int) string { return strings.Repeat("a", n) }
	big := `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"claude_chat_query","arguments":{"sessionId":"x","prompt":"` + pad(limit) + `"}}}`
	s.send(t, big)
	got := s.reply(t)
	checkError(t, got, jsonrpc.CodeInvalidRequest, `77`)
	if !strings.Contains(got, "too large") {
		t.Errorf("reply does not say the message is too large: %s", got)
	}
	// The id after the params is beyond the head: the reply's id is null.
	s.send(t, `{"jsonrpc":"2.0","method":"tools/call","params":{"p":"`+pad(limit)+`"},"id":78}`)
	checkError(t, s.reply(t), jsonrpc.CodeInvalidRequest, `null`)
	// Just under the limit: served (an unknown session is a tool error).
	ok := `{"jsonrpc":"2.0","id":79,"method":"tools/call","params":{"name":"claude_chat_query","arguments":{"sessionId":"x","prompt":"`
	tail := `"}}}`
	s.send(t, ok+pad(limit-len(ok)-len(tail)-1)+tail)
	if got := s.reply(t); !strings.Contains(got, `"id":79`) || !strings.Contains(got, `"isError":true`) {
		t.Fatalf("a frame under the limit: %.300s", got)
	}
}

// TestDefaultFrameLimit: at the default limit a 20 MiB line (over the SDK's
// 16 MiB) is read, and a line over 64 MiB is refused with its id.
func TestDefaultFrameLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~200 MB")
	}
	s := newStdioServer(t, 0)
	prompt := strings.Repeat("p", 20<<20)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claude_chat_query","arguments":{"sessionId":"x","prompt":"`+prompt+`"}}}`)
	got := s.replyWithin(t, time.Minute)
	if !strings.Contains(got, `"id":1`) || !strings.Contains(got, "--max-prompt-bytes") {
		t.Fatalf("a 20 MiB prompt: want the prompt limit's tool error, got %.300s", got)
	}
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"claude_chat_query","arguments":{"sessionId":"x","prompt":"`+strings.Repeat("p", DefaultMaxFrameBytes)+`"}}}`)
	checkError(t, s.replyWithin(t, time.Minute), jsonrpc.CodeInvalidRequest, `2`)
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if got := s.reply(t); !strings.Contains(got, `"id":3`) {
		t.Fatalf("tools/list after a 64 MiB frame: %.200s", got)
	}
}

// TestStdinEOF: the end of input closes InputClosed and ends the server.
func TestStdinEOF(t *testing.T) {
	tr := &StdioTransport{Reader: strings.NewReader("x\n"), Writer: io.Discard}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(context.Background()); err != io.EOF {
		t.Fatalf("Read at the end of input = %v, want io.EOF", err)
	}
	select {
	case <-tr.InputClosed():
	case <-time.After(5 * time.Second):
		t.Fatal("InputClosed was not closed")
	}
}

// FuzzStdioFrames feeds arbitrary input and then a sentinel request: every
// line written back is a JSON-RPC message, and the sentinel is delivered.
// The seeds (every bad frame above) run as a normal test.
func FuzzStdioFrames(f *testing.F) {
	for _, bf := range badFrames {
		f.Add(bf.line)
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	f.Add("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n[{},{\"id\":2}]\n\n")
	f.Add(strings.Repeat("[", 5000))
	f.Add(`{"jsonrpc":"2.0","id":"` + strings.Repeat("z", 3000) + `","method":"x","params":"` + strings.Repeat("y", 3000) + `"}`)
	f.Fuzz(func(t *testing.T, input string) {
		var out syncBuf
		tr := &StdioTransport{Reader: strings.NewReader(input + "\n" + `{"jsonrpc":"2.0","id":"sentinel","method":"ping"}` + "\n"), Writer: &out, MaxFrameBytes: 4096}
		conn, err := tr.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for {
			m, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("the sentinel never arrived: %v", err)
			}
			if r, ok := m.(*jsonrpc.Request); ok && r.ID.Raw() == "sentinel" {
				break
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line == "" {
				continue
			}
			var v any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("wrote a line that is not JSON: %q", line)
			}
			if !strings.Contains(line, `"jsonrpc":"2.0"`) || !strings.Contains(line, `"error"`) {
				t.Fatalf("wrote a line that is not a JSON-RPC error: %q", line)
			}
		}
	})
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProtocolErrorCodes: no JSON-RPC error goes out with code 0: a request
// before initialize and a second initialize are invalid requests; a bad
// logging level is invalid params.
func TestProtocolErrorCodes(t *testing.T) {
	mgr := sessions.NewManager(sessions.Config{CLIPath: filepath.Join(t.TempDir(), "no-claude")})
	srv := NewServer(mgr, Options{Version: "test"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioServer{in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { s.done <- srv.Run(ctx, &StdioTransport{Reader: inR, Writer: outW}) }()
	defer func() { cancel(); inW.Close(); outR.Close(); <-s.done }()

	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	checkError(t, s.reply(t), jsonrpc.CodeInvalidRequest, `1`)
	init := `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	s.send(t, init)
	if got := s.reply(t); !strings.Contains(got, `"result"`) {
		t.Fatalf("initialize: %s", got)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(t, strings.Replace(init, `"id":2`, `"id":3`, 1))
	checkError(t, s.reply(t), jsonrpc.CodeInvalidRequest, `3`)
	s.send(t, `{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"nope"}}`)
	checkError(t, s.reply(t), jsonrpc.CodeInvalidParams, `4`)
	s.send(t, `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"warning"}}`)
	if got := s.reply(t); !strings.Contains(got, `"id":5,"result"`) {
		t.Errorf("a good level: %s", got)
	}
}

// TestEncodeResult: the frame encodeResult writes for a successful
// response is jsonrpc.EncodeMessage's, byte for byte; what it does not
// take (errors, requests, an empty result, one with a newline) falls back.
func TestEncodeResult(t *testing.T) {
	mustID := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, tc := range []struct {
		name   string
		msg    jsonrpc.Message
		framed bool
	}{
		{"int_id", &jsonrpc.Response{ID: mustID(float64(7)), Result: json.RawMessage(`{"a":1}`)}, true},
		{"big_int_id", &jsonrpc.Response{ID: mustID(float64(1 << 52)), Result: json.RawMessage(`[]`)}, true},
		{"string_id", &jsonrpc.Response{ID: mustID(`a<b>&"c"é`), Result: json.RawMessage(`{"text":"<x> & \u2028 é"}`)}, true},
		{"error", &jsonrpc.Response{ID: mustID(float64(1)), Error: &jsonrpc.Error{Code: 1, Message: "no"}}, false},
		{"empty_result", &jsonrpc.Response{ID: mustID(float64(1))}, false},
		{"newline_in_result", &jsonrpc.Response{ID: mustID(float64(1)), Result: json.RawMessage("{\n}")}, false},
		{"request", &jsonrpc.Request{ID: mustID(float64(1)), Method: "ping"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := encodeResult(tc.msg)
			if ok != tc.framed {
				t.Fatalf("framed = %v, want %v", ok, tc.framed)
			}
			if !ok {
				return
			}
			want, err := jsonrpc.EncodeMessage(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encodeResult:\n%s\nEncodeMessage:\n%s", got, want)
			}
		})
	}
}
