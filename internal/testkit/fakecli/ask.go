package fakecli

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// ask sends a recorded CLI → host control request (can_use_tool) with a
// fresh id and waits for the answer. It returns the text that replaces the
// next tool_result ("" to keep the recorded one), and false when the turn
// was interrupted (and has been ended).
func (f *fake) ask(c *capture, e entry, rest []entry) (string, bool) {
	id := newUUID()
	req := mustObject(e.Msg)
	req.set("request_id", id)
	ch := make(chan json.RawMessage, 1)
	f.mu.Lock()
	f.answers[id] = ch
	f.mu.Unlock()
	f.emit(c, req.bytes())

	var answer json.RawMessage
	select {
	case answer = <-ch:
	case <-f.eof:
		f.forget(id)
		return "Tool permission request failed: Error: Tool permission stream closed before response received", true
	case iid := <-f.interrupts:
		f.forget(id)
		f.abortTool(c, id, iid, rest)
		return "", false
	}
	var resp struct {
		Subtype  string `json:"subtype"`
		Error    string `json:"error"`
		Response struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
			Message      string          `json:"message"`
		} `json:"response"`
	}
	if err := json.Unmarshal(answer, &resp); err != nil {
		return "Tool permission request failed: Error: " + err.Error(), true
	}
	if resp.Subtype == "error" {
		return "Tool permission request failed: Error: " + resp.Error, true
	}
	switch resp.Response.Behavior {
	case "allow":
		var upd map[string]any
		if json.Unmarshal(resp.Response.UpdatedInput, &upd) != nil || upd == nil {
			return `Tool permission request failed: ZodError: [{"code":"invalid_type","expected":"record","path":["updatedInput"],"message":"expected record, received undefined"}]`, true
		}
		var req struct {
			Request struct {
				Input map[string]any `json:"input"`
			} `json:"request"`
		}
		_ = json.Unmarshal(e.Msg, &req)
		if !reflect.DeepEqual(upd, req.Request.Input) {
			compact, _ := json.Marshal(upd)
			return "fake claude ran updatedInput: " + string(compact), true
		}
		return "", true
	case "deny":
		if resp.Response.Message == "" {
			return "Permission denied", true
		}
		return resp.Response.Message, true
	}
	return fmt.Sprintf("Tool permission request failed: Error: unknown behavior %q", resp.Response.Behavior), true
}

func (f *fake) forget(id string) {
	f.mu.Lock()
	delete(f.answers, id)
	f.mu.Unlock()
}
