package claudeagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// streamSeeds returns every "msg" of the captures in testdata/streams, and
// fails the test when there are none.
func streamSeeds(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "streams", "*.jsonl"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no captures in ../testdata/streams (%v); run go run ./internal/record", err)
	}
	var seeds [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var rec struct {
				Msg json.RawMessage `json:"msg"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || len(rec.Msg) == 0 {
				f.Fatalf("%s: bad capture line: %v", file, err)
			}
			seeds = append(seeds, append([]byte(nil), rec.Msg...))
		}
		if err := sc.Err(); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
	}
	return seeds
}

var junkSeeds = []string{
	"", " ", "\n", "{", "}", "{}", "[]", "null", "42", `"str"`, "not json at all",
	`{"type":null}`, `{"type":1}`, `{"type":"system"}`, `{"type":"system","subtype":7}`,
	`{"type":"assistant","message":"nope"}`, `{"type":"assistant","message":{"content":{"a":1}}}`,
	`{"type":"assistant","message":{"content":[{"type":"tool_result","content":[{"type":"tool_result","content":"x"}]}]}}`,
	`{"type":"user","message":{"content":[1,2,3]}}`, `{"type":"user","message":{"content":null}}`,
	`{"type":"user","message":{"content":[{"type":"image"},{"type":"text","text":"t"}]}}`,
	`{"type":"result","usage":[],"is_error":"yes"}`, `{"type":"result","is_error":true,"api_error_status":500}`,
	`{"type":"result","is_error":true,"errors":["a","b"]}`, `{"type":"result","modelUsage":{"m":{"costUSD":"x"}}}`,
	`{"type":"stream_event","event":"x"}`, `{"type":"stream_event","event":{"type":"content_block_delta"}}`,
	`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","input":{}}}`,
	`{"type":"control_request","request":"x"}`, `{"type":"control_response","response":null}`,
	`{"type":"control_response","response":{"subtype":"error","request_id":"req_1"}}`,
	`{"type":"control_response","response":{"subtype":"success","request_id":"req_1","response":{"a":1}}}`,
	`{"type":"control_cancel_request","request_id":"x"}`,
	`{"type":"frobnicate","x":1}`, `{"type":"result","type":"user"}`, "{\"type\":\"user\",\"x\":\"\xff\xfe\"}",
	`{"type":"assistant"} trailing`, `  {"type":"result"}  `,
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range streamSeeds(f) {
		f.Add(s)
	}
	for _, s := range junkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := append([]byte(nil), line...)
		m, err := DecodeMessage(line)
		if !bytes.Equal(line, orig) {
			t.Fatal("DecodeMessage modified its input")
		}
		if err != nil {
			if m != nil {
				t.Fatalf("error %v with a message %T", err, m)
			}
			return
		}
		if m == nil {
			t.Fatal("nil message without an error")
		}
		raw := append([]byte(nil), m.Raw()...)
		if !bytes.Equal(raw, bytes.TrimSpace(orig)) {
			t.Fatalf("Raw() = %q, want the trimmed line", raw)
		}
		for i := range line { // Raw must not alias the caller's buffer
			line[i] = 'X'
		}
		if !bytes.Equal(m.Raw(), raw) {
			t.Fatal("Raw() aliases the input")
		}
		switch v := m.(type) {
		case *ResultMessage:
			_ = v.ErrorText()
		case *UserMessage:
			for _, b := range v.Blocks() {
				_ = b.ResultText()
			}
		case *AssistantMessage:
			for _, b := range v.Message.Content {
				_ = b.ResultText()
			}
		case *RawMessage:
			switch v.MsgType {
			case "system", "assistant", "user", "result", "stream_event":
				t.Fatalf("known type %q decoded as RawMessage", v.MsgType)
			}
		}
	})
}

// FuzzDispatch feeds lines to the reader's dispatcher, including the control
// message paths, on a process whose stdin is closed.
func FuzzDispatch(f *testing.F) {
	for _, s := range streamSeeds(f) {
		if len(s) < 64<<10 {
			f.Add(s)
		}
	}
	for _, s := range junkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		life, end := context.WithCancel(context.Background())
		defer end()
		p := &Process{
			log:      slog.New(slog.DiscardHandler),
			pending:  map[string]chan controlResult{"req_1": make(chan controlResult, 1)},
			incoming: map[string]context.CancelFunc{},
			life:     life,
			endLife:  end,
			opts: Options{OnControlRequest: func(ctx context.Context, req *ControlRequest) (any, error) {
				_, _ = req.CanUseTool()
				return Allow(nil), nil
			}},
		}
		p.stdinClosed.Store(true) // answers fail with ErrClosed instead of writing
		p.queue.init()
		p.dispatch(line)
		p.queue.close()
		for {
			m, err := p.queue.pop(life)
			if err != nil {
				break
			}
			if m == nil {
				t.Fatal("nil message queued")
			}
		}
	})
}

// TestResultAnswers: a result ends the turn of the user message it names;
// one of a turn the CLI started by itself (a background task's
// notification) ends none.
func TestResultAnswers(t *testing.T) {
	for _, tc := range []struct {
		line, uuid string
		want       bool
	}{
		{`{"type":"result","subtype":"success"}`, "u1", true}, // 2.1.197 names nothing
		{`{"type":"result","user_message_uuids":["u1"]}`, "u1", true},
		{`{"type":"result","user_message_uuid":"u1"}`, "u1", true},
		{`{"type":"result","user_message_uuids":["u0"]}`, "u1", false},
		{`{"type":"result","origin":{"kind":"task-notification","producer":"session-task"}}`, "u1", false},
		{`{"type":"result","origin":{"kind":"task-notification"},"user_message_uuids":["u1"]}`, "u1", false},
		{`{"type":"result","origin":null}`, "u1", true},
		{`{"type":"result","user_message_uuids":["u0"]}`, "", true}, // a host that sent no uuid takes any
	} {
		m, err := DecodeMessage([]byte(tc.line))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.(*ResultMessage).Answers(tc.uuid); got != tc.want {
			t.Errorf("%s answers %q = %v, want %v", tc.line, tc.uuid, got, tc.want)
		}
	}
}
