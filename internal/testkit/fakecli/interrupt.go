package fakecli

import (
	"fmt"
	"os"
)

// drainInterrupts answers interrupts that arrived as a turn ended; f.mu
// must be held.
func (f *fake) drainInterrupts() {
	for {
		select {
		case id := <-f.interrupts:
			f.controlSuccess(id, nil)
		default:
			return
		}
	}
}

// interruptTail returns the interrupt capture and its lines after the
// interrupt's response: partial assistant, interrupted user line, result.
func (f *fake) interruptTail() (*capture, []entry) {
	c, err := f.caps.get("interrupt")
	if err != nil || len(c.turns) == 0 {
		fmt.Fprintln(f.errw, "fake claude: interrupt capture unusable:", err)
		f.outMu.Lock()
		os.Exit(2)
	}
	var tail []entry
	seen := false
	for _, e := range c.turns[0] {
		switch {
		case e.Dir == "in" && e.subtype == "interrupt":
			seen = true
		case seen && e.Dir == "out" && e.typ != "control_response":
			tail = append(tail, e)
		}
	}
	return c, tail
}

// abort answers interrupt id and ends the turn as the interrupt capture
// does; partial, when set, replaces the partial assistant text.
func (f *fake) abort(id, partial string) {
	f.controlSuccess(id, nil)
	c, tail := f.interruptTail()
	for _, e := range tail {
		line := e.Msg
		switch e.typ {
		case "assistant":
			if partial != "" {
				line = replaceText(line, partial)
			}
		case "result":
			f.emitResult(c, line, e.cost, nil)
			continue
		}
		f.emit(c, line)
	}
}

// abortTool ends a turn interrupted while waiting for a permission answer:
// the CLI cancels its request, answers the interrupt, rejects the tool and
// ends with error_during_execution/aborted_tools.
func (f *fake) abortTool(c *capture, reqID, interruptID string, rest []entry) {
	f.mu.Lock()
	f.cancelled[reqID] = true
	f.mu.Unlock()
	f.emitLine(marshal(struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
	}{"control_cancel_request", reqID}))
	f.controlSuccess(interruptID, nil)
	for _, e := range rest {
		if e.Dir == "out" && e.typ == "user" {
			f.emit(c, replaceToolResult(e.Msg, rejectedToolText))
			break
		}
	}
	ic, tail := f.interruptTail()
	for _, e := range tail {
		switch e.typ {
		case "user":
			f.emit(ic, replaceText(e.Msg, interruptedToolUI))
		case "result":
			f.emitResult(ic, e.Msg, e.cost, map[string]any{"terminal_reason": "aborted_tools"})
		}
	}
}
