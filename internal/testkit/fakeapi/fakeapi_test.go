package fakeapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Name string
	Data map[string]any
	Raw  string
}

func (e sseEvent) delta() map[string]any {
	d, _ := e.Data["delta"].(map[string]any)
	return d
}

// readSSE parses a whole event stream. It checks that every event has an
// "event:" line matching the "type" of its data.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	br := bufio.NewReaderSize(r, 1<<20)
	var cur sseEvent
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Raw = strings.TrimPrefix(line, "data: ")
			if jerr := json.Unmarshal([]byte(cur.Raw), &cur.Data); jerr != nil {
				t.Fatalf("bad data line %.200q: %v", line, jerr)
			}
		case line == "" && cur.Name != "":
			if cur.Data["type"] != cur.Name {
				t.Errorf("event %q has data type %v", cur.Name, cur.Data["type"])
			}
			out = append(out, cur)
			cur = sseEvent{}
		}
		if err != nil {
			if err != io.EOF {
				t.Fatalf("reading stream: %v", err)
			}
			return out
		}
	}
}

func names(evs []sseEvent) string {
	var n []string
	for _, e := range evs {
		n = append(n, e.Name)
	}
	return strings.Join(n, ",")
}

// body builds a Messages API request body.
func body(model string, stream bool, msgs ...any) []byte {
	b, _ := json.Marshal(map[string]any{"model": model, "stream": stream, "max_tokens": 100, "messages": msgs})
	return b
}

func user(content any) map[string]any { return map[string]any{"role": "user", "content": content} }

func post(t *testing.T, ctx context.Context, url string, b []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// stream posts a streaming request and returns its events.
func stream(t *testing.T, srv *Server, msgs ...any) []sseEvent {
	t.Helper()
	resp := post(t, context.Background(), srv.URL()+"/v1/messages?beta=true", body("claude-test", true, msgs...))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	return readSSE(t, resp.Body)
}

// blockText concatenates the text deltas of block index i.
func blockText(evs []sseEvent, i int, field string) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Name == "content_block_delta" && e.Data["index"] == float64(i) {
			if s, ok := e.delta()[field].(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

func TestStreamingText(t *testing.T) {
	srv := startServer(t)
	evs := stream(t, srv, user("hi"))
	want := "message_start,ping,content_block_start,content_block_delta,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop"
	if got := names(evs); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	msg := evs[0].Data["message"].(map[string]any)
	if msg["id"] != "msg_fake_1" || msg["type"] != "message" || msg["role"] != "assistant" || msg["model"] != "claude-test" || msg["stop_reason"] != nil {
		t.Errorf("message_start message = %v", msg)
	}
	if c, ok := msg["content"].([]any); !ok || len(c) != 0 {
		t.Errorf("message_start content = %v", msg["content"])
	}
	u := msg["usage"].(map[string]any)
	if u["input_tokens"] != 10.0 || u["output_tokens"] != 1.0 || u["cache_creation_input_tokens"] != 0.0 || u["cache_read_input_tokens"] != 0.0 {
		t.Errorf("usage = %v", u)
	}
	if cb := evs[2].Data["content_block"].(map[string]any); cb["type"] != "text" || cb["text"] != "" {
		t.Errorf("content_block_start = %v", cb)
	}
	if got := blockText(evs, 0, "text"); got != "Hello from fake API (n_messages=1)" {
		t.Errorf("text = %q", got)
	}
	md := evs[len(evs)-2].Data
	if d := md["delta"].(map[string]any); d["stop_reason"] != "end_turn" || d["stop_sequence"] != nil {
		t.Errorf("message_delta = %v", md)
	}
	if n, _ := md["usage"].(map[string]any)["output_tokens"].(float64); n < 1 {
		t.Errorf("message_delta usage = %v", md["usage"])
	}

	// The count covers the conversation; a second request gets the next id.
	evs = stream(t, srv, user("a"), map[string]any{"role": "assistant", "content": "b"}, user([]any{map[string]any{"type": "text", "text": "c"}}))
	if got := blockText(evs, 0, "text"); got != "Hello from fake API (n_messages=3)" {
		t.Errorf("text = %q", got)
	}
	if id := evs[0].Data["message"].(map[string]any)["id"]; id != "msg_fake_2" {
		t.Errorf("second id = %v", id)
	}
}

func TestNonStreaming(t *testing.T) {
	srv := startServer(t)
	resp := post(t, context.Background(), srv.URL()+"/v1/messages", body("m1", false, user("TOOL_BASH[ls]")))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var msg struct {
		ID, Type, Role, Model string
		StopReason            string `json:"stop_reason"`
		Content               []map[string]any
		Usage                 map[string]int
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.ID != "msg_fake_1" || msg.Type != "message" || msg.Role != "assistant" || msg.Model != "m1" || msg.StopReason != "tool_use" {
		t.Errorf("message = %+v", msg)
	}
	if len(msg.Content) != 2 || msg.Content[0]["text"] != BashPreamble || msg.Content[1]["type"] != "tool_use" || msg.Content[1]["id"] != "toolu_fake_1" {
		t.Fatalf("content = %v", msg.Content)
	}
	if in := msg.Content[1]["input"].(map[string]any); in["command"] != "ls" {
		t.Errorf("input = %v", in)
	}
	if msg.Usage["input_tokens"] != 10 {
		t.Errorf("usage = %v", msg.Usage)
	}
}

func TestToolUseSSE(t *testing.T) {
	srv := startServer(t)
	evs := stream(t, srv, user("run TOOL_BASH[test -d [x] && echo a[b]c] now"))
	want := "message_start,ping,content_block_start,content_block_delta,content_block_delta,content_block_delta,content_block_stop," +
		"content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
	if got := names(evs); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	if got := blockText(evs, 0, "text"); got != BashPreamble {
		t.Errorf("text = %q", got)
	}
	cb := evs[7].Data["content_block"].(map[string]any)
	if cb["type"] != "tool_use" || cb["id"] != "toolu_fake_1" || cb["name"] != "Bash" {
		t.Errorf("tool content_block_start = %v", cb)
	}
	if in, ok := cb["input"].(map[string]any); !ok || len(in) != 0 {
		t.Errorf("start input = %v, want {}", cb["input"])
	}
	if evs[8].delta()["type"] != "input_json_delta" || evs[8].Data["index"] != 1.0 {
		t.Errorf("delta = %v", evs[8].Data)
	}
	var input map[string]string
	if err := json.Unmarshal([]byte(blockText(evs, 1, "partial_json")), &input); err != nil {
		t.Fatal(err)
	}
	// The command stops at the bracket matching TOOL_BASH['s, so nested
	// brackets work as long as they are balanced.
	if input["command"] != "test -d [x] && echo a[b]c" || input["description"] != "Run a command" {
		t.Errorf("input = %v", input)
	}
	if d := evs[10].delta(); d["stop_reason"] != "tool_use" {
		t.Errorf("stop_reason = %v", d["stop_reason"])
	}

	evs = stream(t, srv, user("TOOL_WRITE[/tmp/x.txt|line1|still content]"))
	cb = evs[len(evs)-5].Data["content_block"].(map[string]any)
	if cb["name"] != "Write" || cb["id"] != "toolu_fake_2" {
		t.Errorf("write block = %v", cb)
	}
	if err := json.Unmarshal([]byte(blockText(evs, 1, "partial_json")), &input); err != nil {
		t.Fatal(err)
	}
	if input["file_path"] != "/tmp/x.txt" || input["content"] != "line1|still content" {
		t.Errorf("write input = %v", input)
	}
}

func TestThinkingSSE(t *testing.T) {
	srv := startServer(t)
	evs := stream(t, srv, user("THINK hard"))
	cb := evs[2].Data["content_block"].(map[string]any)
	if cb["type"] != "thinking" || cb["thinking"] != "" || cb["signature"] != "" {
		t.Errorf("thinking start = %v", cb)
	}
	if got := blockText(evs, 0, "thinking"); got != ThinkingText {
		t.Errorf("thinking = %q", got)
	}
	if got := blockText(evs, 0, "signature"); got != FakeSignature {
		t.Errorf("signature = %q", got)
	}
	// thinking_delta comes before signature_delta.
	var kinds []string
	for _, e := range evs {
		if e.Name == "content_block_delta" && e.Data["index"] == 0.0 {
			kinds = append(kinds, e.delta()["type"].(string))
		}
	}
	if strings.Join(kinds, ",") != "thinking_delta,signature_delta" {
		t.Errorf("thinking deltas = %v", kinds)
	}
	if got := blockText(evs, 1, "text"); got != "Hello from fake API (n_messages=1)" {
		t.Errorf("text = %q", got)
	}
}

func TestToolResultReply(t *testing.T) {
	srv := startServer(t)
	asst := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{}}}}
	cases := []struct {
		result map[string]any
		want   string
	}{
		{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}, "Tool said: hi"},
		{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": "boom"}, "Tool error: boom"},
		{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{
			map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "image"}, map[string]any{"type": "text", "text": "b"}}}, "Tool said: a\nb"},
	}
	for _, c := range cases {
		// Extra text in the tool_result message (keywords included) is ignored.
		evs := stream(t, srv, user("TOOL_BASH[x]"), asst, user([]any{c.result, map[string]any{"type": "text", "text": "ERR500 ALWAYS"}}))
		if got := blockText(evs, 0, "text"); got != c.want {
			t.Errorf("reply = %q, want %q", got, c.want)
		}
	}
	reqs := srv.Requests()
	trs := reqs[2].LastToolResults()
	if len(trs) != 1 || trs[0] != (ToolResult{ToolUseID: "toolu_1", Content: "a\nb"}) {
		t.Errorf("LastToolResults = %+v", trs)
	}
}

func errorOf(t *testing.T, resp *http.Response) (status int, typ, msg string) {
	t.Helper()
	defer resp.Body.Close()
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if resp.StatusCode == 200 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 200, "", ""
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("error content type %q", resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if e.Type != "error" || e.Error.Message == "" {
		t.Errorf("error body = %+v", e)
	}
	return resp.StatusCode, e.Error.Type, e.Error.Message
}

func TestErrorsOnceVsAlways(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	want := map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
		429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
	for status, typ := range want {
		for _, streamed := range []bool{true, false} {
			prompt := fmt.Sprintf("please ERR%d (stream=%v)", status, streamed) // distinct text per case
			b := body("m", streamed, user(prompt))
			got, gotTyp, _ := errorOf(t, post(t, ctx, srv.URL()+"/v1/messages", b))
			if got != status || gotTyp != typ {
				t.Errorf("%q first: %d %s, want %d %s", prompt, got, gotTyp, status, typ)
			}
			if got, _, _ := errorOf(t, post(t, ctx, srv.URL()+"/v1/messages", b)); got != 200 {
				t.Errorf("%q retry: status %d, want 200", prompt, got)
			}
		}
	}

	b := body("m", true, user("ERR529 ALWAYS"))
	for i := range 3 {
		if got, typ, _ := errorOf(t, post(t, ctx, srv.URL()+"/v1/messages", b)); got != 529 || typ != "overloaded_error" {
			t.Errorf("ALWAYS attempt %d: %d %s", i, got, typ)
		}
	}

	b = body("claude-nonexistent-9", true, user("hi"))
	for range 2 {
		if got, typ, msg := errorOf(t, post(t, ctx, srv.URL()+"/v1/messages", b)); got != 404 || typ != "not_found_error" || !strings.Contains(msg, "claude-nonexistent-9") {
			t.Errorf("nonexistent model: %d %s %q", got, typ, msg)
		}
	}
}

func TestRequestsRecordedAndRoutes(t *testing.T) {
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	waited := make(chan []Request, 1)
	go func() {
		reqs, err := srv.WaitRequests(ctx, 4)
		if err != nil {
			t.Error(err)
		}
		waited <- reqs
	}()

	errorOf(t, post(t, ctx, srv.URL()+"/v1/messages?beta=true", body("m", true, user("ERR400 ALWAYS"))))
	resp := post(t, ctx, srv.URL()+"/v1/messages/count_tokens?beta=true", []byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	var ct map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil || ct["input_tokens"] != 10 || len(ct) != 1 {
		t.Errorf("count_tokens = %v, %v", ct, err)
	}
	resp.Body.Close()
	if st, typ, _ := errorOf(t, post(t, ctx, srv.URL()+"/v1/other", []byte(`{}`))); st != 404 || typ != "not_found_error" {
		t.Errorf("unknown path: %d %s", st, typ)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, srv.URL()+"/", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}

	reqs := <-waited
	if len(reqs) < 4 {
		t.Fatalf("WaitRequests returned %d requests", len(reqs))
	}
	type pm struct{ method, path, query string }
	got := []pm{}
	for _, r := range srv.Requests() {
		got = append(got, pm{r.Method, r.Path, r.Query})
	}
	wantReqs := []pm{{"POST", "/v1/messages", "beta=true"}, {"POST", "/v1/messages/count_tokens", "beta=true"}, {"POST", "/v1/other", ""}, {"HEAD", "/", ""}}
	if len(got) != len(wantReqs) {
		t.Fatalf("requests = %v", got)
	}
	for i := range got {
		if got[i] != wantReqs[i] {
			t.Errorf("request %d = %v, want %v", i, got[i], wantReqs[i])
		}
	}
	r0 := srv.Requests()[0]
	if r0.Model != "m" || !r0.Stream || r0.Header.Get("X-Api-Key") != "sk-test" || r0.LastUserText() != "ERR400 ALWAYS" || !json.Valid(r0.Body) {
		t.Errorf("recorded request = %+v", r0)
	}
	if mr := srv.MessageRequests(); len(mr) != 1 || mr[0].Path != PathMessages {
		t.Errorf("MessageRequests = %v", mr)
	}
	if mr, err := srv.WaitMessageRequests(ctx, 1); err != nil || len(mr) != 1 || mr[0].Path != PathMessages {
		t.Errorf("WaitMessageRequests(1) = %v, %v", mr, err)
	}
	short0, cancel0 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel0()
	if _, err := srv.WaitMessageRequests(short0, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitMessageRequests(2) = %v", err)
	}

	// Requests returns copies.
	all := srv.Requests()
	all[0].Body[0] = 'X'
	all[0].Header.Set("X-Api-Key", "changed")
	if r := srv.Requests()[0]; r.Body[0] != '{' || r.Header.Get("X-Api-Key") != "sk-test" {
		t.Error("Requests does not return copies")
	}

	// Waiting for more than will come ends with the context.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := srv.WaitRequests(short, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRequests(5) = %v", err)
	}
	// ... or with Close.
	done := make(chan error, 1)
	go func() { _, err := srv.WaitRequests(ctx, 5); done <- err }()
	srv.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("WaitRequests after Close = %v", err)
	}
	if reqs, err := srv.WaitRequests(ctx, 4); err != nil || len(reqs) != 4 {
		t.Errorf("WaitRequests(4) after Close = %d, %v", len(reqs), err)
	}
	srv.Close() // idempotent
}

func TestSetHandler(t *testing.T) {
	srv := startServer(t)
	srv.SetHandler(func(r *Request) *Reply {
		switch r.LastUserText() {
		case "custom":
			return &Reply{Blocks: []Block{{Type: "text", Text: "one two three four"}}, Deltas: 4, StopReason: "max_tokens"}
		case "teapot":
			return &Reply{Status: 418, ErrorMessage: "short and stout"}
		case "tool":
			return &Reply{Blocks: []Block{{Type: "tool_use", ID: "toolu_mine", Name: "mcp__srv__echo", Input: json.RawMessage(`{"text":"ping"}`)}}}
		}
		return nil
	})
	evs := stream(t, srv, user("custom"))
	var deltas []string
	for _, e := range evs {
		if e.Name == "content_block_delta" {
			deltas = append(deltas, e.delta()["text"].(string))
		}
	}
	if strings.Join(deltas, "|") != "one |two |three |four" {
		t.Errorf("deltas = %q", deltas)
	}
	if d := evs[len(evs)-2].delta(); d["stop_reason"] != "max_tokens" {
		t.Errorf("stop_reason = %v", d)
	}
	if st, typ, msg := errorOf(t, post(t, context.Background(), srv.URL()+"/v1/messages", body("m", true, user("teapot")))); st != 418 || typ != "invalid_request_error" || msg != "short and stout" {
		t.Errorf("teapot: %d %s %q", st, typ, msg)
	}
	evs = stream(t, srv, user("tool"))
	if cb := evs[2].Data["content_block"].(map[string]any); cb["id"] != "toolu_mine" || blockText(evs, 0, "partial_json") != `{"text":"ping"}` {
		t.Errorf("tool block = %v / %q", cb, blockText(evs, 0, "partial_json"))
	}
	if d := evs[len(evs)-2].delta(); d["stop_reason"] != "tool_use" {
		t.Errorf("stop_reason = %v", d)
	}
	// nil reply falls back to the keywords.
	if got := blockText(stream(t, srv, user("ECHO me")), 0, "text"); got != "ECHO me" {
		t.Errorf("fallback = %q", got)
	}
}

func TestSlowAndBigText(t *testing.T) {
	srv := startServer(t)
	start := time.Now()
	evs := stream(t, srv, user("SLOW3"))
	if el := time.Since(start); el < 2*SlowDelay || el > 10*SlowDelay {
		t.Errorf("SLOW3 took %v", el)
	}
	var deltas []string
	for _, e := range evs {
		if e.Name == "content_block_delta" {
			deltas = append(deltas, e.delta()["text"].(string))
		}
	}
	if strings.Join(deltas, "|") != "chunk0 |chunk1 |chunk2 " {
		t.Errorf("SLOW3 deltas = %q", deltas)
	}

	evs = stream(t, srv, user("BIGTEXT"))
	n, total := 0, 0
	for _, e := range evs {
		if e.Name == "content_block_delta" {
			s := e.delta()["text"].(string)
			n++
			total += len(s)
			if len(s) > BigTextDelta {
				t.Errorf("delta of %d bytes", len(s))
			}
		}
	}
	if total != BigTextSize || n != 31 {
		t.Errorf("BIGTEXT: %d bytes in %d deltas", total, n)
	}
}

func TestSlowClientDisconnect(t *testing.T) {
	srv := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := post(t, ctx, srv.URL()+"/v1/messages", body("m", true, user("SLOW")))
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"text_delta"`) {
			break
		}
	}
	if srv.streaming.Load() != 1 {
		t.Fatalf("streaming = %d, want 1", srv.streaming.Load())
	}
	cancel()
	resp.Body.Close()
	testkit.Until(t, 3*SlowDelay, "the handler to stop streaming after the client disconnected", func() bool { return srv.streaming.Load() == 0 })
	start := time.Now()
	srv.Close()
	if el := time.Since(start); el > time.Second {
		t.Errorf("Close took %v", el)
	}
}

func TestCloseStopsStream(t *testing.T) {
	srv := startServer(t)
	resp := post(t, context.Background(), srv.URL()+"/v1/messages", body("m", true, user("SLOW")))
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv.Close()
	if el := time.Since(start); el > time.Second {
		t.Errorf("Close took %v with a stream in flight", el)
	}
	rest, _ := io.ReadAll(br)
	if bytes.Contains(rest, []byte("message_stop")) {
		t.Error("stream completed despite Close")
	}
	if _, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader("{}")); err == nil {
		t.Error("server still accepting after Close")
	}
}

func TestLastUserText(t *testing.T) {
	r := &Request{Messages: []Message{
		{Role: "user", Content: json.RawMessage(`"first"`)},
		{Role: "system", Content: json.RawMessage(`"Available agent types…"`)},
		{Role: "assistant", Content: json.RawMessage(`[{"type":"text","text":"x"}]`)},
		{Role: "user", Content: json.RawMessage(`[
			{"type":"text","text":"<system-reminder>\nToday's date is …\n</system-reminder>\n\n"},
			{"type":"text","text":"  keep ECHO  ","cache_control":{"type":"ephemeral"}},
			{"type":"tool_result","tool_use_id":"t","content":"ignored"},
			{"type":"text","text":"<system-reminder>a</system-reminder>second"}]`)},
		{Role: "system", Content: json.RawMessage(`"trailing system"`)},
	}}
	if got, want := r.LastUserText(), "  keep ECHO  \nsecond"; got != want {
		t.Errorf("LastUserText = %q, want %q", got, want)
	}
	if r.ConversationLen() != 3 {
		t.Errorf("ConversationLen = %d", r.ConversationLen())
	}
	if got := r.Messages[3].RawText(); !strings.Contains(got, "Today's date") {
		t.Errorf("RawText = %q", got)
	}
	if got := (&Request{}).LastUserText(); got != "" {
		t.Errorf("empty = %q", got)
	}
}

func TestSplitText(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"abc", 1, []string{"abc"}},
		{"a b c d", 2, []string{"a b ", "c d"}},
		{"a b ", 2, []string{"a ", "b "}},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"ab", 5, []string{"a", "b"}},
		{"ééé", 2, []string{"éé", "é"}},
	}
	for _, c := range cases {
		got := splitText(c.s, c.n)
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("splitText(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
