package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// event is one stdout line and when it arrived.
type event struct {
	line []byte
	at   time.Time
}

// session is one running CLI being recorded.
type session struct {
	ctx      context.Context
	stdin    io.WriteCloser
	lines    <-chan event
	readErr  chan error
	capture  *bufio.Writer
	last     time.Time
	nlines   int
	seq      int
	scrub    func([]byte) []byte
	answered map[string]bool
	cwd      string // the CLI's working directory
}

// newSession records the CLI whose stdin and stdout are given into the
// capture file f; a goroutine reads stdout until it ends.
func newSession(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, f io.Writer, scrub func([]byte) []byte) *session {
	lines := make(chan event, 64)
	s := &session{
		ctx:      ctx,
		stdin:    stdin,
		lines:    lines,
		readErr:  make(chan error, 1),
		capture:  bufio.NewWriterSize(f, 1<<20),
		last:     time.Now(),
		scrub:    scrub,
		answered: map[string]bool{},
	}
	go func() {
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			b, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(b)) > 0 {
				lines <- event{line: bytes.TrimRight(b, "\r\n"), at: time.Now()}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				s.readErr <- err
				close(lines)
				return
			}
		}
	}()
	return s
}

// run initializes the CLI, runs the scenario, closes stdin and records
// the rest of stdout.
func (s *session) run(sc scenario) error {
	runErr := func() error {
		if _, err := s.control("initialize", map[string]any{}); err != nil {
			return fmt.Errorf("initialize: %w", err)
		}
		return sc.run(s)
	}()
	// stdin stays open until the last result has arrived (the CLI truncates
	// a big stdout line when stdin closes first); then the CLI exits.
	_ = s.stdin.Close()
	for ev := range s.lines {
		if err := s.out(ev); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

func (s *session) write(rec map[string]any, msg []byte) error {
	if !json.Valid(msg) {
		return fmt.Errorf("the CLI wrote a line that is not JSON: %.200q", msg)
	}
	rec["msg"] = json.RawMessage(s.scrub(msg))
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	s.nlines++
	_, err = s.capture.Write(append(b, '\n'))
	return err
}

// out records one stdout line and answers the CLI's own control requests.
func (s *session) out(ev event) error {
	ms := ev.at.Sub(s.last).Milliseconds()
	if ms < 0 {
		ms = 0
	}
	s.last = ev.at
	if err := s.write(map[string]any{"dir": "out", "ms": ms}, ev.line); err != nil {
		return err
	}
	var m struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		Request   struct {
			Subtype string          `json:"subtype"`
			Input   json.RawMessage `json:"input"`
		} `json:"request"`
	}
	if json.Unmarshal(ev.line, &m) != nil || m.Type != "control_request" || s.answered[m.RequestID] {
		return nil
	}
	s.answered[m.RequestID] = true
	resp := map[string]any{"request_id": m.RequestID}
	if m.Request.Subtype == "can_use_tool" {
		resp["subtype"] = "success"
		resp["response"] = map[string]any{"behavior": "allow", "updatedInput": m.Request.Input}
	} else {
		resp["subtype"] = "error"
		resp["error"] = "Unsupported control request subtype: " + m.Request.Subtype
	}
	return s.send(map[string]any{"type": "control_response", "response": resp})
}

// send records and writes one line to the CLI, after recording the lines
// that already arrived (so the capture keeps the real order).
func (s *session) send(v any) error {
	if err := s.drain(); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.last = time.Now()
	if err := s.write(map[string]any{"dir": "in"}, b); err != nil {
		return err
	}
	_, err = s.stdin.Write(append(b, '\n'))
	return err
}

func (s *session) drain() error {
	for {
		select {
		case ev, ok := <-s.lines:
			if !ok {
				return nil
			}
			if err := s.out(ev); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

func (s *session) sendUser(text string) error {
	return s.send(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": text},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
}

// sendUserUUID sends a user message with its uuid, as the server does.
func (s *session) sendUserUUID(text, uuid string) error {
	return s.send(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": text},
		"parent_tool_use_id": nil,
		"session_id":         "",
		"uuid":               uuid,
	})
}

// turn sends one user message and records up to its result.
func (s *session) turn(text string) error {
	if err := s.sendUser(text); err != nil {
		return err
	}
	_, err := s.until(isResult)
	return err
}

// control sends a control request and records up to its response, which
// must be a success.
func (s *session) control(subtype string, body map[string]any) (map[string]any, error) {
	m, err := s.request(subtype, body)
	if err != nil {
		return nil, err
	}
	if r, _ := m["response"].(map[string]any); r["subtype"] != "success" {
		return nil, fmt.Errorf("%s refused: %v", subtype, r["error"])
	}
	return m, nil
}

// request sends a control request and records up to its response, a
// success or an error.
func (s *session) request(subtype string, body map[string]any) (map[string]any, error) {
	s.seq++
	id := fmt.Sprintf("req_%d_record", s.seq)
	req := map[string]any{"subtype": subtype}
	for k, v := range body {
		req[k] = v
	}
	if err := s.send(map[string]any{"type": "control_request", "request_id": id, "request": req}); err != nil {
		return nil, err
	}
	return s.until(func(m map[string]any) bool {
		r, _ := m["response"].(map[string]any)
		return m["type"] == "control_response" && r["request_id"] == id
	})
}

// until records lines until one satisfies done, and returns it.
func (s *session) until(done func(map[string]any) bool) (map[string]any, error) {
	for {
		select {
		case ev, ok := <-s.lines:
			if !ok {
				return nil, errors.New("the CLI closed stdout early")
			}
			if err := s.out(ev); err != nil {
				return nil, err
			}
			var m map[string]any
			if json.Unmarshal(ev.line, &m) == nil && done(m) {
				return m, nil
			}
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
}

// pause waits d while recording what arrives meanwhile.
func (s *session) pause(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-s.lines:
			if !ok {
				return errors.New("the CLI closed stdout early")
			}
			if err := s.out(ev); err != nil {
				return err
			}
		case <-t.C:
			return nil
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
}
