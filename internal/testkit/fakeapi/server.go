// Package fakeapi is a scriptable fake of the Anthropic Messages API for
// end-to-end tests that run the real `claude` CLI.
//
// The server listens on 127.0.0.1 only. It answers POST /v1/messages
// (streaming SSE and non-streaming JSON) and POST
// /v1/messages/count_tokens; every other path gets a 404 error body.
// Query strings such as ?beta=true are ignored for routing.
//
// Replies are chosen by keywords in the text of the last user message (see
// DefaultReply), or by a handler installed with SetHandler.
//
// What the real CLI (2.1.197) sends, as observed in the tests:
//   - a "HEAD /" warm-up request (User-Agent Bun/…) at startup, which gets a
//     404 and is recorded like any other request;
//   - POST /v1/messages?beta=true with "stream":true for every model call;
//   - after a 404 on a streaming call, the same request again without
//     "stream" (a non-streaming fallback);
//   - user messages with extra "<system-reminder>" text blocks, and with
//     the default model a "system"-role message in the messages array. The
//     keyword logic ignores both (see Request.LastUserText and
//     Request.ConversationLen).
//
// It owns the HTTP side only: it must not know the CLI's stream-json nor
// import this server's packages, so that it fakes what the CLI talks to
// and nothing of what is under test.
package fakeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Paths served by the fake.
const (
	PathMessages    = "/v1/messages"
	PathCountTokens = "/v1/messages/count_tokens"
)

// ErrClosed is returned by WaitRequests when the server is closed before
// enough requests arrived.
var ErrClosed = errors.New("fakeapi: server closed")

// Server is a scriptable fake of the Anthropic Messages API (POST
// /v1/messages, streaming SSE and non-streaming JSON), on 127.0.0.1.
type Server struct {
	ln   net.Listener
	http *http.Server
	url  string

	done      chan struct{} // closed by Close; stops in-flight streams
	closeOnce sync.Once
	handlers  sync.WaitGroup // in-flight HTTP handlers

	msgSeq  atomic.Int64 // msg_fake_<n>
	toolSeq atomic.Int64 // toolu_fake_<n>
	reqSeq  atomic.Int64 // req_fake_<n> (request-id header)

	streaming atomic.Int64 // handlers currently writing a reply; for tests

	mu       sync.Mutex
	closed   bool
	requests []Request
	changed  chan struct{} // closed and replaced whenever requests grows
	handler  func(*Request) *Reply
	failed   map[string]bool      // prompt texts that already failed once (ERRnnn)
	limits   map[string]time.Time // LIMIT[n] keyword → when its limit resets
}

// Start starts a server listening on 127.0.0.1:0.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeapi: listen: %w", err)
	}
	s := &Server{
		ln:      ln,
		url:     "http://" + ln.Addr().String(),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		failed:  make(map[string]bool),
		limits:  make(map[string]time.Time),
	}
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

// URL returns the base URL, "http://127.0.0.1:PORT", suitable for
// ANTHROPIC_BASE_URL.
func (s *Server) URL() string { return s.url }

// Close stops the server: it closes the listener and all connections, stops
// in-flight streams and waits for the handlers to return. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		_ = s.http.Close()
		s.handlers.Wait()
	})
}

// SetHandler installs a function that chooses the reply for each
// /v1/messages request. A nil handler, or a nil Reply from it, falls back to
// the keyword behaviour of DefaultReply.
func (s *Server) SetHandler(h func(*Request) *Reply) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

// Requests returns a copy of every request received so far, in arrival
// order: /v1/messages, count_tokens and unknown paths alike (see
// Request.Path).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneRequests(s.requests)
}

// MessageRequests is like Requests but keeps only POST /v1/messages requests.
func (s *Server) MessageRequests() []Request {
	all := s.Requests()
	out := all[:0]
	for _, r := range all {
		if r.Path == PathMessages && r.Method == http.MethodPost {
			out = append(out, r)
		}
	}
	return out
}

// WaitRequests blocks until at least n requests (of any path) have been
// recorded, then returns a copy of all of them. It fails when ctx ends or the
// server is closed first.
//
// Note that the real CLI also sends a "HEAD /" connection warm-up request at
// startup, which counts here; WaitMessageRequests counts only
// POST /v1/messages.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	return s.wait(ctx, n, func(*Request) bool { return true })
}

// WaitMessageRequests is like WaitRequests but counts and returns only
// POST /v1/messages requests.
func (s *Server) WaitMessageRequests(ctx context.Context, n int) ([]Request, error) {
	return s.wait(ctx, n, func(r *Request) bool { return r.Path == PathMessages && r.Method == http.MethodPost })
}

func (s *Server) wait(ctx context.Context, n int, keep func(*Request) bool) ([]Request, error) {
	// matching returns the requests kept by keep; s.mu must be held.
	matching := func() []Request {
		var out []Request
		for i := range s.requests {
			if keep(&s.requests[i]) {
				out = append(out, s.requests[i])
			}
		}
		return out
	}
	for {
		s.mu.Lock()
		have := matching()
		if len(have) >= n {
			out := cloneRequests(have)
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("fakeapi: waiting for %d requests (have %d): %w", n, len(have), ctx.Err())
		case <-s.done:
			s.mu.Lock()
			ok := len(matching()) >= n
			s.mu.Unlock()
			if !ok {
				return nil, ErrClosed
			}
		}
	}
}

func cloneRequests(in []Request) []Request {
	out := make([]Request, len(in))
	for i, r := range in {
		out[i] = r.clone()
	}
	return out
}

// record appends r and wakes WaitRequests callers.
func (s *Server) record(r *Request) {
	s.mu.Lock()
	r.Received = time.Now()
	s.requests = append(s.requests, r.clone())
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// failOnce reports whether an ERRnnn prompt should fail now: always when
// always is set, otherwise only the first time this text is seen.
func (s *Server) failOnce(text string, always bool) bool {
	if always {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed[text] {
		return false
	}
	s.failed[text] = true
	return true
}

// limitReset is when the usage limit of a LIMIT[n] keyword resets: n
// seconds after the first request that named it.
func (s *Server) limitReset(key string, d time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	reset, ok := s.limits[key]
	if !ok {
		reset = resetAfter(d)
		s.limits[key] = reset
	}
	return reset
}

func (s *Server) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "fake API server is closed", "")
		return
	}
	s.handlers.Add(1)
	h := s.handler
	s.mu.Unlock()
	defer s.handlers.Done()

	w.Header().Set("request-id", "req_fake_"+strconv.FormatInt(s.reqSeq.Add(1), 10))

	req, parseErr := readRequest(hr)
	s.record(req)

	switch {
	case hr.URL.Path == PathMessages && hr.Method == http.MethodPost:
	case hr.URL.Path == PathCountTokens && hr.Method == http.MethodPost:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"input_tokens":10}`))
		return
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("fake API: no route for %s %s", hr.Method, hr.URL.Path), "")
		return
	}
	if parseErr != nil {
		writeError(w, http.StatusBadRequest, "fake API: "+parseErr.Error(), "")
		return
	}

	var reply *Reply
	if h != nil {
		reply = h(req)
	}
	if reply == nil {
		reply = s.defaultReply(req)
	}

	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.ErrorMessage, "")
		return
	}
	blocks := s.fillIDs(reply.Blocks)
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		for _, b := range blocks {
			if b.Type == "tool_use" {
				stop = "tool_use"
			}
		}
	}
	msgID := "msg_fake_" + strconv.FormatInt(s.msgSeq.Add(1), 10)
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}

	s.streaming.Add(1)
	defer s.streaming.Add(-1)
	if req.Stream {
		s.writeStream(w, hr.Context(), msgID, model, blocks, stop, reply)
		return
	}
	writeJSONMessage(w, msgID, model, blocks, stop)
}

// fillIDs returns a copy of blocks where tool_use blocks without an ID get
// toolu_fake_<n>.
func (s *Server) fillIDs(in []Block) []Block {
	out := make([]Block, len(in))
	copy(out, in)
	for i := range out {
		if out[i].Type == "tool_use" && out[i].ID == "" {
			out[i].ID = "toolu_fake_" + strconv.FormatInt(s.toolSeq.Add(1), 10)
		}
	}
	return out
}

// errorTypes maps HTTP statuses to Anthropic error types.
var errorTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	529: "overloaded_error",
}

// ErrorType returns the Anthropic error type for an HTTP status.
func ErrorType(status int) string {
	if t, ok := errorTypes[status]; ok {
		return t
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func writeError(w http.ResponseWriter, status int, msg, typ string) {
	if typ == "" {
		typ = ErrorType(status)
	}
	if msg == "" {
		msg = fmt.Sprintf("fake %d error", status)
	}
	body, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// usage is the usage object of message_start and of non-streaming replies.
func usage(outputTokens int) map[string]any {
	return map[string]any{
		"input_tokens":                10,
		"output_tokens":               outputTokens,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
	}
}

// outputTokens is a rough token count for the reply, for message_delta.
func outputTokens(blocks []Block) int {
	n := 0
	for _, b := range blocks {
		n += len(b.Text) + len(b.Thinking) + len(b.Name)
		if b.Type == "tool_use" {
			n += len(inputJSON(b.Input))
		}
	}
	return n/4 + 1
}

func inputJSON(in any) []byte {
	if in == nil {
		return []byte("{}")
	}
	if raw, ok := in.(json.RawMessage); ok && len(bytes.TrimSpace(raw)) > 0 {
		return raw
	}
	b, err := json.Marshal(in)
	if err != nil || string(b) == "null" {
		return []byte("{}")
	}
	return b
}

// fullBlock is the complete JSON form of a content block.
func fullBlock(b Block) map[string]any {
	switch b.Type {
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": b.Thinking, "signature": b.signature()}
	case "tool_use":
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": json.RawMessage(inputJSON(b.Input))}
	default:
		return map[string]any{"type": "text", "text": b.Text}
	}
}

func writeJSONMessage(w http.ResponseWriter, id, model string, blocks []Block, stop string) {
	content := make([]any, 0, len(blocks))
	for _, b := range blocks {
		content = append(content, fullBlock(b))
	}
	body, err := json.Marshal(map[string]any{
		"id":            id,
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage":         usage(outputTokens(blocks)),
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "fake API: "+err.Error(), "")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// sse writes server-sent events and stops at the first failure.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func (e *sse) event(typ string, data map[string]any) {
	if e.err != nil {
		return
	}
	data["type"] = typ
	b, err := json.Marshal(data)
	if err != nil {
		e.err = err
		return
	}
	buf := make([]byte, 0, len(b)+len(typ)+20)
	buf = append(buf, "event: "...)
	buf = append(buf, typ...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	if _, e.err = e.w.Write(buf); e.err != nil {
		return
	}
	e.err = e.rc.Flush()
}

func (s *Server) writeStream(w http.ResponseWriter, ctx context.Context, id, model string, blocks []Block, stop string, reply *Reply) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, rc: http.NewResponseController(w)}

	// wait pauses between deltas; it reports false when the client went away
	// or the server is closing.
	wait := func() bool {
		if reply.DeltaDelay <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(reply.DeltaDelay)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
		case <-s.done:
		}
		return false
	}

	e.event("message_start", map[string]any{"message": map[string]any{
		"id":            id,
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       []any{},
		"stop_reason":   nil,
		"stop_sequence": nil,
		"usage":         usage(1),
	}})
	e.event("ping", map[string]any{})
	for i, b := range blocks {
		switch b.Type {
		case "thinking":
			e.event("content_block_start", map[string]any{"index": i,
				"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, d := range splitText(b.Thinking, 1) {
				e.event("content_block_delta", map[string]any{"index": i,
					"delta": map[string]any{"type": "thinking_delta", "thinking": d}})
			}
			e.event("content_block_delta", map[string]any{"index": i,
				"delta": map[string]any{"type": "signature_delta", "signature": b.signature()}})
		case "tool_use":
			e.event("content_block_start", map[string]any{"index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			e.event("content_block_delta", map[string]any{"index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(inputJSON(b.Input))}})
		default:
			e.event("content_block_start", map[string]any{"index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			n := reply.Deltas
			if n <= 0 {
				n = 3
			}
			for j, d := range splitText(b.Text, n) {
				if j > 0 && !wait() {
					return
				}
				e.event("content_block_delta", map[string]any{"index": i,
					"delta": map[string]any{"type": "text_delta", "text": d}})
				if e.err != nil {
					return
				}
			}
		}
		e.event("content_block_stop", map[string]any{"index": i})
		if e.err != nil || ctx.Err() != nil {
			return
		}
	}
	e.event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outputTokens(blocks)},
	})
	e.event("message_stop", map[string]any{})
}
