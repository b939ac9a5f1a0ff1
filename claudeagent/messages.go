package claudeagent

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	// A drop-in for encoding/json, three times as fast on a 2 MB line (see
	// CLAUDE.md, Decisions; FuzzDecodeMatchesStdlib).
	json "github.com/segmentio/encoding/json"
)

// Message is one line of the CLI's stream-json output, decoded. The concrete
// types are [*SystemMessage], [*AssistantMessage], [*UserMessage],
// [*ResultMessage], [*StreamEvent] and, for anything this package does not
// know, [*RawMessage]. Control messages never appear here: [Process]
// handles them itself.
type Message interface {
	// Type is the line's top-level "type".
	Type() string
	// Raw is the line exactly as the CLI wrote it.
	Raw() json.RawMessage
}

type rawLine struct{ raw json.RawMessage }

func (r rawLine) Raw() json.RawMessage { return r.raw }

// RawMessage is a message of a type (or system subtype) this package does
// not model. It is passed through so that newer CLIs lose nothing.
type RawMessage struct {
	rawLine
	MsgType string
	Subtype string
}

// Type implements [Message].
func (m *RawMessage) Type() string { return m.MsgType }

// SystemMessage is a "system" line. Subtype selects which fields are set:
//   - "init": CWD, Tools, MCPServers, Model, PermissionMode, ClaudeCodeVersion, …
//   - "status": Status, PermissionMode, CompactResult
//   - "api_retry": Attempt, MaxRetries, RetryDelayMs, ErrorStatus, Error
//   - "compact_boundary": CompactMetadata
//   - "task_started", "task_updated", "task_notification", "task_progress":
//     TaskID, ToolUseID, Description, TaskType, Status, Summary, Patch
//
// Other subtypes arrive as *SystemMessage too, with only the common fields
// and Raw.
type SystemMessage struct {
	rawLine
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	UUID      string `json:"uuid"`

	// init
	CWD               string            `json:"cwd"`
	Tools             []string          `json:"tools"`
	MCPServers        []MCPServerStatus `json:"mcp_servers"`
	Model             string            `json:"model"`
	PermissionMode    string            `json:"permissionMode"`
	SlashCommands     []string          `json:"slash_commands"`
	APIKeySource      string            `json:"apiKeySource"`
	ClaudeCodeVersion string            `json:"claude_code_version"`
	OutputStyle       string            `json:"output_style"`
	Agents            []string          `json:"agents"`

	// status
	Status        *string `json:"status"`
	CompactResult string  `json:"compact_result"`

	// model_fallback: the CLI switched models (trigger: overloaded,
	// model_not_found, …).
	Trigger       string `json:"trigger"`
	OriginalModel string `json:"original_model"`
	FallbackModel string `json:"fallback_model"`
	Content       string `json:"content"`

	// api_retry
	Attempt      int     `json:"attempt"`
	MaxRetries   int     `json:"max_retries"`
	RetryDelayMs float64 `json:"retry_delay_ms"`
	ErrorStatus  *int    `json:"error_status"`
	Error        string  `json:"error"`

	// compact_boundary
	CompactMetadata json.RawMessage `json:"compact_metadata"`

	// hook_response: a hook ran (outcome success, error, cancelled); its
	// output holds the error when it could not run.
	HookName string `json:"hook_name"`
	Outcome  string `json:"outcome"`
	Output   string `json:"output"`

	// task_*
	TaskID      string          `json:"task_id"`
	ToolUseID   string          `json:"tool_use_id"`
	Description string          `json:"description"`
	TaskType    string          `json:"task_type"`
	Summary     string          `json:"summary"`
	Patch       json.RawMessage `json:"patch"`
}

// Type implements [Message].
func (*SystemMessage) Type() string { return "system" }

// MCPServerStatus is one entry of system/init's mcp_servers.
type MCPServerStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// ContentBlock is one Anthropic content block. Type selects the fields:
// "text" (Text), "thinking" (Thinking, Signature), "tool_use" (ID, Name,
// Input), "tool_result" (ToolUseID, Content, IsError). Any other block keeps
// its JSON in Raw.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Raw       json.RawMessage `json:"-"`
}

// heldBlocks are the block types whose fields ContentBlock holds; a block
// of another type keeps its JSON in Raw (see keepRaw).
var heldBlocks = map[string]bool{"text": true, "thinking": true, "tool_use": true, "tool_result": true}

// keepRaw fills Raw for the blocks of content (a JSON array of blocks,
// decoded as blocks) whose type ContentBlock does not hold. Blocks are
// decoded in one pass with their message (a block of megabytes of text is
// not decoded twice); only a message with such a block is read again.
func keepRaw(blocks []ContentBlock, content func() []json.RawMessage) {
	if !slices.ContainsFunc(blocks, func(b ContentBlock) bool { return !heldBlocks[b.Type] }) {
		return
	}
	raws := content()
	for i := range blocks {
		if !heldBlocks[blocks[i].Type] && i < len(raws) {
			blocks[i].Raw = raws[i]
		}
	}
}

// ResultText flattens a tool_result's Content, which the CLI sends either as
// a string or as a list of blocks, into plain text.
func (b *ContentBlock) ResultText() string { return flattenContent(b.Content) }

// flattenContent turns a string or a list of content blocks into text.
func flattenContent(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_result":
			parts = append(parts, b.ResultText())
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// Usage is the token usage the API reported.
type Usage struct {
	InputTokens              int64  `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

// APIMessage is the "message" object of an assistant line.
type APIMessage struct {
	ID         string         `json:"id"`
	Role       string         `json:"role"`
	Model      string         `json:"model"`
	Content    []ContentBlock `json:"content"`
	StopReason *string        `json:"stop_reason"`
	Usage      *Usage         `json:"usage"`
}

// AssistantMessage is an "assistant" line. The CLI emits one line per
// content block; all lines of one API response share Message.ID. A
// synthetic message (Message.Model "<synthetic>") with Error set reports an
// API failure.
type AssistantMessage struct {
	rawLine
	Message         APIMessage `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid"`
	Error           string     `json:"error"`
	// APIError and APIErrorParams type the error of a synthetic message
	// (2.1.330): usage_limit_reached with the limit, say.
	APIError       string          `json:"api_error"`
	APIErrorParams *APIErrorParams `json:"api_error_params"`
}

// Type implements [Message].
func (*AssistantMessage) Type() string { return "assistant" }

// UserMessage is a "user" line: tool results, interrupt markers, replayed
// local-command output and subagent prompts.
type UserMessage struct {
	rawLine
	Message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	SessionID       string          `json:"session_id"`
	UUID            string          `json:"uuid"`
	Timestamp       string          `json:"timestamp"`
	IsReplay        bool            `json:"isReplay"`
	ToolUseResult   json.RawMessage `json:"tool_use_result"`
}

// Type implements [Message].
func (*UserMessage) Type() string { return "user" }

// Blocks returns the message content as blocks; a plain string content is
// returned as a single text block.
func (m *UserMessage) Blocks() []ContentBlock {
	var s string
	if json.Unmarshal(m.Message.Content, &s) == nil {
		return []ContentBlock{{Type: "text", Text: s}}
	}
	var blocks []ContentBlock
	_ = json.Unmarshal(m.Message.Content, &blocks)
	keepRaw(blocks, func() []json.RawMessage {
		var raws []json.RawMessage
		_ = json.Unmarshal(m.Message.Content, &raws)
		return raws
	})
	return blocks
}

// PermissionDenial is one entry of a result's permission_denials.
type PermissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// ModelUsage is one entry of a result's modelUsage (cumulative per process).
type ModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	WebSearchRequests        int64   `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
	MaxOutputTokens          int64   `json:"maxOutputTokens"`
}

// ResultMessage is the "result" line that ends every turn. Check IsError,
// not only Subtype: API failures arrive as subtype "success" with IsError.
// TotalCostUSD and ModelUsage accumulate over the whole process.
type ResultMessage struct {
	rawLine
	Subtype           string                `json:"subtype"`
	IsError           bool                  `json:"is_error"`
	APIErrorStatus    *int                  `json:"api_error_status"`
	APIError          string                `json:"api_error"` // 2.1.330: usage_limit_reached, …
	DurationMs        int64                 `json:"duration_ms"`
	DurationAPIMs     int64                 `json:"duration_api_ms"`
	NumTurns          int                   `json:"num_turns"`
	Result            string                `json:"result"`
	StopReason        *string               `json:"stop_reason"`
	SessionID         string                `json:"session_id"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             *Usage                `json:"usage"`
	ModelUsage        map[string]ModelUsage `json:"modelUsage"`
	PermissionDenials []PermissionDenial    `json:"permission_denials"`
	TerminalReason    string                `json:"terminal_reason"`
	Errors            []string              `json:"errors"`
	UUID              string                `json:"uuid"`
	StructuredOutput  json.RawMessage       `json:"structured_output"`
	// Origin is set on the result of a turn the CLI started by itself (a
	// background task's notification); UserMessageUUIDs (2.1.330 and
	// later) name the user messages a turn answered.
	Origin           json.RawMessage `json:"origin"`
	UserMessageUUIDs []string        `json:"user_message_uuids"`
	UserMessageUUID  string          `json:"user_message_uuid"`
}

// Answers reports whether the result ends the turn of the user message
// with uuid: not a turn the CLI started by itself, and, when the CLI names
// the messages a turn answered, one of them.
func (m *ResultMessage) Answers(uuid string) bool {
	if len(m.Origin) > 0 && string(m.Origin) != "null" {
		return false
	}
	if uuid == "" || (len(m.UserMessageUUIDs) == 0 && m.UserMessageUUID == "") {
		return true
	}
	return m.UserMessageUUID == uuid || slices.Contains(m.UserMessageUUIDs, uuid)
}

// Type implements [Message].
func (*ResultMessage) Type() string { return "result" }

// ErrorText says what went wrong in a failed turn: the errors list, else the
// result text, else the API status. It is "" for a successful turn.
func (m *ResultMessage) ErrorText() string {
	if !m.IsError {
		return ""
	}
	switch {
	case len(m.Errors) > 0:
		return strings.Join(m.Errors, "; ")
	case m.Result != "":
		return m.Result
	case m.APIErrorStatus != nil:
		return fmt.Sprintf("API error %d", *m.APIErrorStatus)
	}
	return m.Subtype
}

// StreamEvent is a "stream_event" line (only with IncludePartialMessages):
// a raw Anthropic SSE event in Event, its "type" in EventType.
type StreamEvent struct {
	rawLine
	Event           json.RawMessage `json:"event"`
	EventType       string          `json:"-"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	UUID            string          `json:"uuid"`

	delta *deltaOf // a text delta's text, when decoded on the fast path (delta.go)
}

// Type implements [Message].
func (*StreamEvent) Type() string { return "stream_event" }

// TextDelta returns the text a content_block_delta adds to an assistant
// text block (text_delta) or, with thinking true, to a thinking block
// (thinking_delta); ok is false for any other event. A sub-agent's events
// (ParentToolUseID set) are the caller's to skip.
func (m *StreamEvent) TextDelta() (text string, thinking, ok bool) {
	if m.delta != nil {
		return m.delta.text, false, true
	}
	if m.EventType != "content_block_delta" {
		return "", false, false
	}
	var ev struct {
		Delta struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Thinking string `json:"thinking"`
		} `json:"delta"`
	}
	if json.Unmarshal(m.Event, &ev) != nil {
		return "", false, false
	}
	switch ev.Delta.Type {
	case "text_delta":
		return ev.Delta.Text, false, true
	case "thinking_delta":
		return ev.Delta.Thinking, true, true
	}
	return "", false, false
}

// envelope is decoded first to pick the concrete type.
type envelope struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
}

// ErrNotJSON reports a stdout line that is not a JSON object.
var ErrNotJSON = errors.New("line is not a JSON object")

// knownTypes are the message types DecodeMessage decodes into a type of
// its own (their decode validates the whole line).
var knownTypes = map[string]bool{"system": true, "assistant": true, "user": true, "result": true, "stream_event": true, "rate_limit_event": true}

// sniffType reads the value of a "type" key that opens line, as the CLI
// writes it: {"type":"assistant",…; ok is false for any other form.
func sniffType(line []byte) (string, bool) {
	const open = `{"type":"`
	if !bytes.HasPrefix(line, []byte(open)) {
		return "", false
	}
	rest := line[len(open):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || end > 64 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// DecodeMessage decodes one stream-json line (without its newline) into a
// [Message]. Control messages decode to *RawMessage; [Process] intercepts
// them before that. Unknown types are returned as *RawMessage, never as an
// error. An error means the line is not a JSON object or a known type's
// fields have the wrong JSON types.
func DecodeMessage(line []byte) (Message, error) {
	return decodeOwned(append([]byte(nil), bytes.TrimSpace(line)...))
}

// decodeOwned is DecodeMessage for a line the message may keep as its raw
// JSON (the caller gives it up): the pump's lines, read fresh each, are not
// copied again.
func decodeOwned(line []byte) (Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, ErrNotJSON
	}
	// The CLI writes "type" first: read it without a pass over the whole
	// line (a turn's text can be megabytes; the typed decode below is the
	// one full pass). Anything else takes the full envelope.
	var env envelope
	if t, ok := sniffType(line); ok && knownTypes[t] {
		env.Type = t
	} else if err := json.Unmarshal(line, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	raw := rawLine{raw: json.RawMessage(line)}
	var (
		m   Message
		err error
	)
	switch env.Type {
	case "system":
		v := &SystemMessage{rawLine: raw}
		err, m = json.Unmarshal(line, v), v
	case "assistant":
		v := &AssistantMessage{rawLine: raw}
		if err = decodeAssistant(line, v); err == nil {
			keepRaw(v.Message.Content, func() []json.RawMessage {
				var c struct {
					Message struct {
						Content []json.RawMessage `json:"content"`
					} `json:"message"`
				}
				_ = json.Unmarshal(line, &c)
				return c.Message.Content
			})
		}
		m = v
	case "user":
		v := &UserMessage{rawLine: raw}
		err, m = json.Unmarshal(line, v), v
	case "result":
		v := &ResultMessage{rawLine: raw}
		err, m = decodeResult(line, v), v
	case "rate_limit_event":
		m, err = decodeRateLimitEvent(line, raw)
	case "stream_event":
		if v, ok := decodeTextDelta(line, raw); ok {
			return v, nil
		}
		v := &StreamEvent{rawLine: raw}
		if err = json.Unmarshal(line, v); err == nil {
			// The CLI writes the event's type first: read from the front,
			// not decoded again (a delta's text is tens of KiB).
			if typ, ok := sniffType(v.Event); ok {
				v.EventType = typ
			} else {
				var ev envelope
				_ = json.Unmarshal(v.Event, &ev)
				v.EventType = ev.Type
			}
		}
		m = v
	default:
		return &RawMessage{rawLine: raw, MsgType: env.Type, Subtype: env.Subtype}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("decoding %s message: %w", env.Type, err)
	}
	return m, nil
}
