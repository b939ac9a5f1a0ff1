package fakecli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// control answers a control request from the host.
func (f *fake) control(id string, req json.RawMessage) {
	var r struct {
		Subtype string          `json:"subtype"`
		Mode    string          `json:"mode"`
		Model   json.RawMessage `json:"model"`
	}
	_ = json.Unmarshal(req, &r)
	if r.Subtype != "" && r.Subtype == f.ignore {
		return
	}
	switch r.Subtype {
	case "initialize":
		var init struct {
			JSONSchema json.RawMessage `json:"jsonSchema"`
		}
		_ = json.Unmarshal(req, &init)
		if len(init.JSONSchema) > 0 {
			f.jsonSchema.Store(true)
		}
		f.logged.Do(func() { logArgs(f.args, req) })
		payload, err := f.initializePayload()
		if err != nil {
			f.controlError(id, err.Error())
			return
		}
		f.controlSuccess(id, payload)
	case "interrupt":
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.busy {
			select {
			case f.interrupts <- id:
				return // the turn answers it as it stops
			default:
			}
		}
		f.controlSuccess(id, nil)
	case "set_model":
		var model string
		_ = json.Unmarshal(r.Model, &model) // null → default
		f.mu.Lock()
		f.model = model
		f.mu.Unlock()
		if line := f.setModelLine(model); line != nil {
			f.emitLine(line)
		}
		f.controlSuccess(id, nil)
	case "set_permission_mode":
		f.setPermissionMode(id, r.Mode)
	case "rename_session":
		var rn struct {
			Title *string `json:"title"`
		}
		if json.Unmarshal(req, &rn) != nil || rn.Title == nil {
			f.controlError(id, "rename_session: title must be a string")
			return
		}
		f.trans.title(f.sid, *rn.Title)
		f.controlSuccess(id, nil)
	case "apply_flag_settings":
		var a struct {
			Settings map[string]json.RawMessage `json:"settings"`
		}
		if json.Unmarshal(req, &a) != nil || a.Settings == nil {
			f.controlError(id, "apply_flag_settings needs settings")
			return
		}
		f.controlSuccess(id, nil)
	case "rewind_files":
		f.rewindFiles(id, req)
	default:
		f.controlError(id, "Unsupported control request subtype: "+r.Subtype)
	}
}

// setPermissionMode answers set_permission_mode: {"mode":…}, then, for a
// mode the CLI knows, a system/status line.
func (f *fake) setPermissionMode(id, mode string) {
	if mode == "bypassPermissions" && !f.bypass {
		f.controlError(id, "Cannot set permission mode to bypassPermissions because the session was not launched with --dangerously-skip-permissions")
		return
	}
	f.mu.Lock()
	f.mode = mode
	f.mu.Unlock()
	payload, _ := json.Marshal(map[string]string{"mode": mode})
	f.controlSuccess(id, payload)
	switch mode {
	case "default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto":
		f.emitLine(marshal(struct {
			Type           string  `json:"type"`
			Subtype        string  `json:"subtype"`
			Status         *string `json:"status"`
			PermissionMode string  `json:"permissionMode"`
			UUID           string  `json:"uuid"`
			SessionID      string  `json:"session_id"`
		}{"system", "status", nil, mode, newUUID(), f.sid}))
	}
}

type controlResponse struct {
	Type     string              `json:"type"`
	Response controlResponseBody `json:"response"`
}

type controlResponseBody struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

func (f *fake) controlSuccess(id string, payload json.RawMessage) {
	line, _ := json.Marshal(controlResponse{Type: "control_response",
		Response: controlResponseBody{Subtype: "success", RequestID: id, Response: payload}})
	f.emitLine(line)
}

func (f *fake) controlError(id, msg string) {
	line, _ := json.Marshal(controlResponse{Type: "control_response",
		Response: controlResponseBody{Subtype: "error", RequestID: id, Error: msg}})
	f.emitLine(line)
}

// initializePayload is the recorded initialize response with the fake's pid.
func (f *fake) initializePayload() (json.RawMessage, error) {
	c, err := f.caps.get("plain")
	if err != nil {
		return nil, err
	}
	e, _ := c.find(0, "out", func(e *entry) bool { return e.typ == "control_response" })
	if e == nil {
		return nil, errors.New("fake claude: plain.jsonl has no initialize response")
	}
	payload := mustObject(mustObject(e.Msg).get("response")).get("response")
	p, err := parseObject(payload)
	if err != nil {
		return nil, fmt.Errorf("fake claude: initialize response: %w", err)
	}
	p.set("pid", os.Getpid())
	out := p.bytes()
	return []byte(f.paths.Replace(string(out))), nil
}

// resolveModel maps a model alias the way the recorded CLI did: "opus" as
// in the set_model capture, other values through the initialize models
// list, anything else unchanged.
func (f *fake) resolveModel(model string) string {
	if c, err := f.caps.get("set_model"); err == nil {
		if e, _ := c.find(0, "in", func(e *entry) bool { return e.subtype == "set_model" }); e != nil {
			var req struct {
				Request struct {
					Model string `json:"model"`
				} `json:"request"`
			}
			if json.Unmarshal(e.Msg, &req) == nil && req.Request.Model == model {
				if init, _ := c.find(0, "out", func(e *entry) bool { return e.typ == "system" && e.subtype == "init" }); init != nil {
					var m struct {
						Model string `json:"model"`
					}
					if json.Unmarshal(init.Msg, &m) == nil && m.Model != "" {
						return m.Model
					}
				}
			}
		}
	}
	if payload, err := f.initializePayload(); err == nil {
		var p struct {
			Models []struct {
				Value         string `json:"value"`
				ResolvedModel string `json:"resolvedModel"`
			} `json:"models"`
		}
		if json.Unmarshal(payload, &p) == nil {
			for _, m := range p.Models {
				if m.Value == model && m.ResolvedModel != "" {
					return m.ResolvedModel
				}
			}
		}
	}
	return model
}

// setModelLine is the user line the CLI emits for set_model, from the
// set_model capture, with the model changed.
func (f *fake) setModelLine(model string) []byte {
	c, err := f.caps.get("set_model")
	if err != nil {
		return nil
	}
	e, _ := c.find(0, "out", func(e *entry) bool { return e.typ == "user" })
	if e == nil {
		return nil
	}
	name := model
	if name == "" {
		name = "default"
	}
	o := mustObject(e.Msg)
	msg := mustObject(o.get("message"))
	msg.set("content", fmt.Sprintf("<local-command-stdout>Set model to %s (%s)</local-command-stdout>", name, f.resolveModel(name)))
	o.set("message", msg)
	o.set("uuid", newUUID())
	o.set("timestamp", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	return f.rewrite(c, o.bytes())
}
