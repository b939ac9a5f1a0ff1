package fakecli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// emitLine writes one line to stdout.
func (f *fake) emitLine(line []byte) {
	f.trans.note(line)
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	f.outMu.Lock()
	defer f.outMu.Unlock()
	_, _ = f.out.Write(buf)
}

// rewrite puts the fake's session id and paths into a recorded line.
func (f *fake) rewrite(c *capture, line []byte) []byte {
	if c.sessionID != "" && c.sessionID != f.sid {
		line = bytes.ReplaceAll(line, []byte(c.sessionID), []byte(f.sid))
	}
	if bytes.Contains(line, []byte("CWD")) || bytes.Contains(line, []byte("HOME")) {
		line = []byte(f.paths.Replace(string(line)))
	}
	if f.resetsIn > 0 && bytes.Contains(line, []byte(`"resetsAt":`)) {
		reset := time.Now().Add(f.resetsIn + time.Second - 1).Unix()
		line = resetsAtRe.ReplaceAll(line, []byte(`"resetsAt":`+strconv.FormatInt(reset, 10)))
	}
	return line
}

var resetsAtRe = regexp.MustCompile(`"resetsAt":\d+`)

// emit writes a recorded line of capture c, with a fresh uuid and, for
// assistant lines, a message id that is unique per turn (the CLI never
// repeats them; hosts may group or deduplicate by them).
func (f *fake) emit(c *capture, line []byte) {
	line = f.rewrite(c, line)
	if o, err := parseObject(line); err == nil && o.has("uuid") {
		o.set("uuid", newUUID())
		if msg, err := parseObject(o.get("message")); err == nil && msg.has("id") {
			var id string
			_ = json.Unmarshal(msg.get("id"), &id)
			if f.msgIDs[id] == "" {
				f.msgSeq++
				f.msgIDs[id] = fmt.Sprintf("msg_fakecli_%d", f.msgSeq)
			}
			msg.set("id", f.msgIDs[id])
			o.set("message", msg)
		}
		line = o.bytes()
	}
	f.emitLine(line)
}

// crash simulates the CLI dying mid-turn.
func (f *fake) crash() {
	f.outMu.Lock() // no half-written line
	fmt.Fprintln(f.errw, "fatal: simulated crash")
	os.Exit(1)
}

var slowRe = regexp.MustCompile(`SLOW(\d*)`)

// pick chooses the capture for a prompt; slow is the SLOW chunk count.
func (f *fake) pick(text string) (name string, slow int) {
	f.mu.Lock()
	mode := f.mode
	f.mu.Unlock()
	switch {
	case f.loggedOut:
		return "not_logged_in", 0
	case strings.Contains(text, "TOOL_BASH[sleep") && !f.maxT && (!f.stdio || mode == "bypassPermissions"):
		return "steer_tool", 0
	case strings.Contains(text, "TOOL_BASH"):
		switch {
		case f.maxT:
			return "max_turns", 0
		case f.stdio && mode != "bypassPermissions":
			return "can_use_tool", 0
		}
		return "tool_use", 0
	case strings.Contains(text, "TOOL_ASK"):
		return "ask_user_question", 0
	case strings.Contains(text, "THINK"):
		return "thinking", 0
	case slowRe.MatchString(text):
		n := slowDeltas
		if m := slowRe.FindStringSubmatch(text); m[1] != "" {
			if v, err := strconv.Atoi(m[1]); err == nil && v > 0 {
				n = v
			}
		}
		return "interrupt", n
	case strings.Contains(text, "ERR400"):
		return "api_error", 0
	case strings.Contains(text, "LIMITWARN"):
		return "usage_warning", 0
	case strings.Contains(text, "LIMIT["):
		return "usage_limit", 0
	case strings.Contains(text, "BIGTEXT"):
		return "big_line", 0
	}
	return "plain", 0
}

// pause waits for a recorded pause, scaled; it returns early with the id of
// an interrupt request.
func (f *fake) pause(ms int64) (string, bool) {
	d := min(time.Duration(ms)*time.Millisecond, maxPause)
	return f.wait(time.Duration(float64(d) / f.speed))
}

func (f *fake) wait(d time.Duration) (string, bool) {
	if d <= 0 {
		select {
		case id := <-f.interrupts:
			return id, true
		default:
			return "", false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case id := <-f.interrupts:
		return id, true
	case <-t.C:
		return "", false
	}
}

// runTurn replays one turn for a user message.
func (f *fake) runTurn(text string) {
	f.nturns++
	f.msgIDs = map[string]string{}
	if f.nturns == 1 && f.die > 0 {
		time.AfterFunc(f.die, f.crash)
	}
	if f.noise {
		f.emitNoise()
	}
	name, slow := f.pick(text)
	c, err := f.caps.get(name)
	if err == nil && len(c.turns) == 0 {
		err = fmt.Errorf("fake claude: %s.jsonl has no turn", name)
	}
	if err != nil {
		fmt.Fprintln(f.errw, err)
		f.outMu.Lock()
		os.Exit(2)
	}
	seg := c.turns[0]
	var refusal string // tool_result text replacing the recorded one
	for i, e := range seg {
		if e.Dir == "in" {
			if e.typ == "control_request" && e.subtype == "interrupt" {
				f.slowStream(slow)
				return
			}
			continue
		}
		if id, ok := f.pause(e.Ms); ok {
			f.abort(id, "")
			return
		}
		line := e.Msg
		switch e.typ {
		case "control_response", "control_cancel_request":
			continue
		case "stream_event":
			if !f.partials {
				continue
			}
		case "assistant":
			if bytes.Contains(line, []byte(`"type":"tool_use"`)) {
				f.setToolOpen(true)
			}
		case "control_request":
			var ok bool
			if refusal, ok = f.ask(c, e, seg[i+1:]); !ok {
				return
			}
			continue
		case "user":
			f.setToolOpen(false)
			if refusal != "" {
				line = replaceToolResult(line, refusal)
				refusal = ""
			}
		case "system":
			if e.subtype == "init" {
				line = f.initLine(line)
			}
		case "result":
			f.emitResult(c, line, e.cost, nil)
			continue
		}
		f.emit(c, line)
	}
}

// setToolOpen records whether the running turn waits for a tool call's
// result: a user message arriving meanwhile is folded into the turn.
func (f *fake) setToolOpen(open bool) {
	f.mu.Lock()
	f.toolOpen = open
	f.mu.Unlock()
}

// initLine sets the model and permission mode of a system/init line.
func (f *fake) initLine(line []byte) []byte {
	f.mu.Lock()
	model, mode := f.model, f.mode
	f.mu.Unlock()
	if model == "" && mode == "" {
		return line
	}
	o := mustObject(line)
	if model != "" {
		o.set("model", f.resolveModel(model))
	}
	if mode != "" {
		o.set("permissionMode", mode)
	}
	return o.bytes()
}

// emitResult writes a result line with the process's running cost; set
// overrides fields.
func (f *fake) emitResult(c *capture, line []byte, cost float64, set map[string]any) {
	f.setToolOpen(false) // a message from now on gets a turn of its own
	f.cost += cost
	o := mustObject(line)
	o.set("total_cost_usd", f.cost)
	if so := os.Getenv(EnvStructured); so != "" && f.jsonSchema.Load() {
		o.set("structured_output", json.RawMessage(so))
	}
	for k, v := range set {
		o.set(k, v)
	}
	var isErr bool
	_ = json.Unmarshal(o.get("is_error"), &isErr)
	f.lastErr = isErr
	f.emit(c, o.bytes())
}

// emitDelta writes a stream_event text delta (the partial capture's),
// with --include-partial-messages.
func (f *fake) emitDelta(text string) {
	if !f.partials {
		return
	}
	c, err := f.caps.get("partial")
	if err != nil {
		fmt.Fprintln(f.errw, "fake claude: partial capture unusable:", err)
		return
	}
	for _, e := range c.turns[0] {
		if e.typ == "stream_event" && bytes.Contains(e.Msg, []byte(`"text_delta"`)) {
			o := mustObject(f.rewrite(c, e.Msg))
			ev := mustObject(o.get("event"))
			d := mustObject(ev.get("delta"))
			d.set("text", text)
			ev.set("delta", json.RawMessage(d.bytes()))
			o.set("event", json.RawMessage(ev.bytes()))
			o.set("uuid", newUUID())
			f.emitLine(o.bytes())
			return
		}
	}
}

func (f *fake) emitNoise() {
	f.emitLine(nil)
	f.emitLine([]byte("not json at all"))
	f.emitLine([]byte(`{"type":"frobnicate","x":1}`))
	f.emitLine(marshal(struct {
		Type      string `json:"type"`
		Subtype   string `json:"subtype"`
		SessionID string `json:"session_id"`
		UUID      string `json:"uuid"`
	}{"system", "fake_unknown_subtype", f.sid, newUUID()}))
}

// slowStream plays the SLOW reply: n chunks 0.5 s apart (scaled), ended
// early by an interrupt; uninterrupted, it ends like a plain turn.
func (f *fake) slowStream(n int) {
	step := time.Duration(float64(slowDelay) / f.speed)
	chunks := func(k int) string {
		var b strings.Builder
		for i := range k {
			fmt.Fprintf(&b, "chunk%d ", i)
		}
		return b.String()
	}
	start := time.Now()
	for i := range n {
		if i > 0 {
			if id, ok := f.wait(step); ok {
				k := min(n, int(time.Since(start)/max(step, 1))+1)
				f.abort(id, chunks(k))
				return
			}
		}
		f.emitDelta(fmt.Sprintf("chunk%d ", i))
	}
	c, tail := f.interruptTail()
	for _, e := range tail {
		if e.typ == "assistant" {
			f.emit(c, replaceText(e.Msg, chunks(n)))
		}
	}
	plain, err := f.caps.get("plain")
	if err != nil || len(plain.turns) == 0 {
		fmt.Fprintln(f.errw, "fake claude: plain capture unusable:", err)
		f.outMu.Lock()
		os.Exit(2)
	}
	for _, e := range plain.turns[0] {
		if e.typ == "result" {
			f.emitResult(plain, e.Msg, e.cost, map[string]any{"result": chunks(n)})
		}
	}
}
