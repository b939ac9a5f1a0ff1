package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/stdio"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
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

// stdioServer runs the server over a stdio.Transport on pipes. The CLI
// path points nowhere: these tests start no process.
type stdioServer struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func newStdioServer(t *testing.T, maxFrame int) *stdioServer {
	t.Helper()
	mgr := sessions.NewManager(sessions.Config{CLIPath: filepath.Join(t.TempDir(), "no-claude")})
	srv := mcptools.NewServer(mgr, mcptools.Options{Version: "test"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioServer{in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { s.done <- srv.Run(ctx, &stdio.Transport{Reader: inR, Writer: outW, MaxFrameBytes: maxFrame}) }()
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
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"claude_chat_query","arguments":{"sessionId":"x","prompt":"`+strings.Repeat("p", stdio.DefaultMaxFrameBytes)+`"}}}`)
	checkError(t, s.replyWithin(t, time.Minute), jsonrpc.CodeInvalidRequest, `2`)
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if got := s.reply(t); !strings.Contains(got, `"id":3`) {
		t.Fatalf("tools/list after a 64 MiB frame: %.200s", got)
	}
}

// TestStdinEOF: the end of input closes InputClosed and ends the server.
func TestStdinEOF(t *testing.T) {
	tr := &stdio.Transport{Reader: strings.NewReader("x\n"), Writer: io.Discard}
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
		var out testkit.Buffer
		tr := &stdio.Transport{Reader: strings.NewReader(input + "\n" + `{"jsonrpc":"2.0","id":"sentinel","method":"ping"}` + "\n"), Writer: &out, MaxFrameBytes: 4096}
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

// TestProtocolErrorCodes: no JSON-RPC error goes out with code 0: a request
// before initialize and a second initialize are invalid requests; a bad
// logging level is invalid params.
func TestProtocolErrorCodes(t *testing.T) {
	mgr := sessions.NewManager(sessions.Config{CLIPath: filepath.Join(t.TempDir(), "no-claude")})
	srv := mcptools.NewServer(mgr, mcptools.Options{Version: "test"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioServer{in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { s.done <- srv.Run(ctx, &stdio.Transport{Reader: inR, Writer: outW}) }()
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

// eofRequests are requests written all at once and followed at once by the
// end of input: each must be answered (issue 27: `initialize` then EOF got
// no answer in 23 of 30 runs), a tools/call among them.
var eofRequests = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"claude_session_list","arguments":{}}}`,
}

// TestAnsweredBeforeEOF: every request received before stdin closes is
// answered before Run returns, run after run.
func TestAnsweredBeforeEOF(t *testing.T) {
	mgr := sessions.NewManager(sessions.Config{CLIPath: filepath.Join(t.TempDir(), "no-claude")})
	t.Cleanup(mgr.Shutdown)
	input := strings.Join(eofRequests, "\n") + "\n"
	for run := range 30 {
		var out testkit.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := mcptools.NewServer(mgr, mcptools.Options{Version: "test"}).Run(ctx, &stdio.Transport{Reader: strings.NewReader(input), Writer: &out})
		cancel()
		if err != nil && err != io.EOF {
			t.Fatalf("run %d: Run = %v", run, err)
		}
		answered := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal([]byte(line), &r) == nil && r.Result != nil {
				answered[string(r.ID)] = true
			}
		}
		for _, id := range []string{"1", "2", "3", "4"} {
			if !answered[id] {
				t.Fatalf("run %d: request %s was not answered before the end; output:\n%s", run, id, out.String())
			}
		}
	}
}

// TestEOFWaitsForAnswers: the transport tells the SDK of the end of input
// only once it has written an answer to every request it handed over; the
// server's calls to the client (elicitation), pending at the end or made
// after it, are answered with an error, as the client can no longer
// answer them, and those made after it are not written.
func TestEOFWaitsForAnswers(t *testing.T) {
	inR, inW := io.Pipe()
	var out testkit.Buffer
	tr := &stdio.Transport{Reader: inR, Writer: &out}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := func(id any) *jsonrpc.Request {
		jid, err := jsonrpc.MakeID(id)
		if err != nil {
			t.Fatal(err)
		}
		return &jsonrpc.Request{ID: jid, Method: "elicitation/create", Params: json.RawMessage(`{}`)}
	}
	if err := conn.Write(ctx, call("before")); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
		inW.Close()
	}()
	m, err := conn.Read(ctx)
	req, ok := m.(*jsonrpc.Request)
	if err != nil || !ok || req.ID.Raw() != int64(1) {
		t.Fatalf("Read = %v, %v; want request 1", m, err)
	}
	<-tr.InputClosed()
	// The call pending at the end is answered with an error.
	m, err = conn.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != "before" || resp.Error == nil || !strings.Contains(resp.Error.Error(), "closed its input") {
		t.Fatalf("Read after the end = %v, %v; want the error answer to the pending call", m, err)
	}
	// A call made after the end is answered alike and not written.
	if err := conn.Write(ctx, call("after")); err != nil {
		t.Fatal(err)
	}
	m, err = conn.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != "after" || resp.Error == nil {
		t.Fatalf("Read = %v, %v; want the error answer to the call made after the end", m, err)
	}
	if strings.Contains(out.String(), `"after"`) {
		t.Errorf("the call made after the end was written: %s", out.String())
	}
	// Request 1 is not answered yet: no end for the SDK.
	done, stop := context.WithCancel(ctx)
	stop()
	if m, err := conn.Read(done); err != context.Canceled {
		t.Fatalf("Read with request 1 unanswered = %v, %v; want nothing until it is answered", m, err)
	}
	if err := conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and every later Read
		if _, err := conn.Read(ctx); err != io.EOF {
			t.Fatalf("Read after the last answer = %v, want io.EOF", err)
		}
	}
	if !strings.Contains(out.String(), `{"jsonrpc":"2.0","id":1,"result":{}}`) {
		t.Errorf("the answer to request 1 was not written: %s", out.String())
	}
}

// TestListenStreamEndsAtEOF: a subscriptions/listen stream, which lasts as
// long as the connection, is cancelled at the end of input and answered
// with its closing result; Run returns (it would otherwise wait for the
// stream's answer for ever).
func TestListenStreamEndsAtEOF(t *testing.T) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	input := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}` + "\n"
	mgr := sessions.NewManager(sessions.Config{CLIPath: filepath.Join(t.TempDir(), "no-claude")})
	t.Cleanup(mgr.Shutdown)
	var out testkit.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := mcptools.NewServer(mgr, mcptools.Options{Version: "test"}).Run(ctx, &stdio.Transport{Reader: strings.NewReader(input), Writer: &out})
	if err != nil && err != io.EOF {
		t.Fatalf("Run = %v; output:\n%s", err, out.String())
	}
	// Its closing result, or an error when the cancellation came before
	// its handler started.
	if !strings.Contains(out.String(), `"id":2,"result"`) && !strings.Contains(out.String(), `"id":2,"error"`) {
		t.Errorf("the listen stream got no closing answer:\n%s", out.String())
	}
}

// TestRunningQueryAnsweredAtEOF: a query running when stdin closes is
// answered before Run returns: interrupted by the stop of the sessions
// that the end of input starts (as main's awaitStop does).
func TestRunningQueryAnsweredAtEOF(t *testing.T) {
	path, env := fakecli.Command(t)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env})
	t.Cleanup(mgr.Shutdown)
	inR, inW := io.Pipe()
	var out testkit.Buffer
	tr := &stdio.Transport{Reader: inR, Writer: &out}
	done := make(chan error, 1)
	go func() { done <- mcptools.NewServer(mgr, mcptools.Options{}).Run(context.Background(), tr) }()
	go func() { <-tr.InputClosed(); mgr.Shutdown() }()
	write := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(eofRequests[0])
	write(eofRequests[1])
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"claude_session_create","arguments":{"cwd":"` + t.TempDir() + `"}}}`)
	testkit.Until(t, 10*time.Second, "the session", func() bool { return strings.Contains(out.String(), `{"jsonrpc":"2.0","id":2,"result"`) })
	sid := mgr.List()[0].ID
	write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"claude_chat_query","arguments":{"sessionId":"` + sid + `","prompt":"SLOW5"}}}`)
	testkit.Until(t, 10*time.Second, "the query to run", func() bool { return runningQuery(mgr, sid) || strings.Contains(out.String(), `"id":3,`) })
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the end of input")
	}
	var answer string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":3,`) {
			answer = line
		}
	}
	if !strings.Contains(answer, `"result"`) || !strings.Contains(answer, "The query was interrupted.") {
		t.Errorf("the running query's answer: %.500s\noutput:\n%.2000s", answer, out.String())
	}
}

// TestMain lets the test binary double as the fake claude CLI (see
// fakecli.Command).
func TestMain(m *testing.M) { fakecli.TestMain(m) }

// runningQuery reports whether session id has a query running.
func runningQuery(m *sessions.Manager, id string) bool {
	s, err := m.Get(id)
	return err == nil && s.Info().State == state.Running
}
