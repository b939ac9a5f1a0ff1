package claudeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ControlRequest is a control request the CLI sent to the host, such as
// "can_use_tool", "hook_callback" or "mcp_message".
type ControlRequest struct {
	RequestID string
	Subtype   string
	// Request is the whole "request" object, subtype included.
	Request json.RawMessage
}

// CanUseTool decodes a "can_use_tool" request.
func (r *ControlRequest) CanUseTool() (*CanUseToolRequest, error) {
	if r.Subtype != "can_use_tool" {
		return nil, fmt.Errorf("control request is %q, not can_use_tool", r.Subtype)
	}
	var c CanUseToolRequest
	if err := json.Unmarshal(r.Request, &c); err != nil {
		return nil, fmt.Errorf("decoding can_use_tool: %w", err)
	}
	return &c, nil
}

// CanUseToolRequest asks the host whether a tool may run. It arrives only
// when the CLI runs with --permission-prompt-tool stdio.
type CanUseToolRequest struct {
	ToolName              string             `json:"tool_name"`
	DisplayName           string             `json:"display_name"`
	Input                 json.RawMessage    `json:"input"`
	Description           string             `json:"description"`
	PermissionSuggestions []PermissionUpdate `json:"permission_suggestions"`
	BlockedPath           string             `json:"blocked_path"`
	DecisionReason        string             `json:"decision_reason"`
	DecisionReasonType    string             `json:"decision_reason_type"`
	ToolUseID             string             `json:"tool_use_id"`
	AgentID               string             `json:"agent_id"`
}

// PermissionUpdate is one permission change, as suggested by the CLI in
// can_use_tool and sent back in an allow answer's updatedPermissions. Its
// JSON is kept whole in Raw so that shapes this package does not model
// survive the round trip.
type PermissionUpdate struct {
	Type        string          `json:"type"`
	Destination string          `json:"destination"`
	Mode        string          `json:"mode,omitempty"`
	Behavior    string          `json:"behavior,omitempty"`
	Raw         json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw JSON.
func (u *PermissionUpdate) UnmarshalJSON(data []byte) error {
	type plain PermissionUpdate
	if err := json.Unmarshal(data, (*plain)(u)); err != nil {
		return err
	}
	u.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// MarshalJSON writes the raw JSON back when there is one.
func (u PermissionUpdate) MarshalJSON() ([]byte, error) {
	if len(u.Raw) > 0 {
		return u.Raw, nil
	}
	type plain PermissionUpdate
	return json.Marshal(plain(u))
}

// PermissionResult is the answer to a can_use_tool request. Use [Allow] or
// [Deny] to build one: the CLI rejects an allow without updatedInput.
type PermissionResult struct {
	Behavior           string             `json:"behavior"`
	UpdatedInput       json.RawMessage    `json:"updatedInput,omitempty"`
	UpdatedPermissions []PermissionUpdate `json:"updatedPermissions,omitempty"`
	Message            string             `json:"message,omitempty"`
	Interrupt          bool               `json:"interrupt,omitempty"`
}

// Allow lets the tool run with input (the original input when unchanged),
// applying the given permission updates.
func Allow(input json.RawMessage, updates ...PermissionUpdate) *PermissionResult {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return &PermissionResult{Behavior: "allow", UpdatedInput: input, UpdatedPermissions: updates}
}

// Deny refuses the tool; message reaches the model as the tool's error.
func Deny(message string) *PermissionResult {
	if message == "" {
		message = "Permission denied by the host."
	}
	return &PermissionResult{Behavior: "deny", Message: message}
}

// ControlHandler answers a control request from the CLI. It runs in its own
// goroutine; ctx is cancelled when the CLI sends control_cancel_request for
// this request or the process ends. The returned value is marshalled as the
// success payload; an error becomes an error response. Every request gets
// exactly one answer, unless it was cancelled.
type ControlHandler func(ctx context.Context, req *ControlRequest) (any, error)

// ErrUnsupportedControl is what a [ControlHandler] returns for a subtype it
// does not handle; the CLI gets the same error text its SDKs send.
var ErrUnsupportedControl = errors.New("unsupported control request subtype")

// ControlError is an error response from the CLI to one of our requests.
type ControlError struct {
	Subtype string
	Message string
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("claude refused control request %s: %s", e.Subtype, e.Message)
}

// controlEnvelope covers the three control message types on stdout.
type controlEnvelope struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
}

type controlResult struct {
	payload json.RawMessage
	err     error
}

// InitializeRequest is the body of the "initialize" control request. All
// fields are optional.
type InitializeRequest struct {
	Hooks              map[string]any  `json:"hooks,omitempty"`
	Agents             json.RawMessage `json:"agents,omitempty"`
	SystemPrompt       string          `json:"systemPrompt,omitempty"`
	AppendSystemPrompt string          `json:"appendSystemPrompt,omitempty"`
	// JSONSchema makes the final answer structured output (both pinned
	// CLIs take it here as they take --json-schema).
	JSONSchema json.RawMessage `json:"jsonSchema,omitempty"`
}

// InitializeResponse is the CLI's answer to initialize.
type InitializeResponse struct {
	Commands    []SlashCommand  `json:"commands"`
	Models      []ModelInfo     `json:"models"`
	Account     json.RawMessage `json:"account"`
	OutputStyle string          `json:"output_style"`
	PID         int             `json:"pid"`
	Raw         json.RawMessage `json:"-"`
}

// SlashCommand is one entry of initialize's commands.
type SlashCommand struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ModelInfo maps a model value (an alias such as "sonnet") to the model id
// it resolves to.
type ModelInfo struct {
	Value         string `json:"value"`
	ResolvedModel string `json:"resolvedModel"`
	DisplayName   string `json:"displayName"`
	Description   string `json:"description"`
}

// ResolveModel returns the model id that value (an alias or an id) resolves
// to according to models, and whether it was found. A "[1m]"-style suffix
// is kept as the CLI reports it.
func ResolveModel(models []ModelInfo, value string) (string, bool) {
	for _, m := range models {
		if m.Value == value && m.ResolvedModel != "" {
			return m.ResolvedModel, true
		}
	}
	return "", false
}
