package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tool definitions. Every host session pays for them in context, so
// they are lean: a description that says when to use the tool with one
// example, input schemas whose properties say only what their name does
// not, the session options defined once (claude_session_create's; direct
// query takes them without repeating them), and output schemas that give
// the shape without prose.

func (h *handlers) tools() []tool {
	return []tool{
		newTool(&mcp.Tool{
			Name:  "claude_session_create",
			Title: "New session",
			Description: `Start a Claude Code session; then claude_chat_query; close it when done. ` +
				`Example: {"cwd": "/repo", "model": "sonnet"}`,
			// Open world: the protocol's default.
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false)},
		}, h.create),
		newTool(&mcp.Tool{
			Name:        "claude_session_close",
			Title:       "Close session",
			Description: `Close a session: its process stops for good.`,
			// Destructive: the protocol's default.
			Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
		}, h.close),
		newTool(&mcp.Tool{
			Name:  "claude_chat_query",
			Title: "Query a session",
			// Status running leads to claude_chat_wait through that tool's
			// description and the running result's text.
			Description: `Send a prompt to a session; it may edit files and run commands. ` +
				`Example: {"sessionId": "4b1c…", "prompt": "Fix the test"}`,
			// No annotations: the defaults (destructive, open world) are right.
		}, h.query),
		newTool(&mcp.Tool{
			Name:        "claude_chat_steer",
			Title:       "Steer a query",
			Description: `Send a message into a running query. Example: {"sessionId": "4b1c…", "message": "Skip docs"}`,
			// No annotations: a message is a prompt (destructive, open world).
		}, h.steer),
		newTool(&mcp.Tool{
			Name:        "claude_chat_interrupt",
			Title:       "Interrupt",
			Description: `Stop a session's running query; it stays.`,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
		}, h.interrupt),
		newTool(&mcp.Tool{
			Name:        "claude_chat_model",
			Title:       "Switch model",
			Description: `Switch model. Example: {"sessionId": "4b1c…", "model": "opus"}`,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
		}, h.model),
		newTool(&mcp.Tool{
			Name:        "claude_chat_mode",
			Title:       "Switch mode",
			Description: `Switch permission mode. Example: {"sessionId": "4b1c…", "permissionMode": "plan"}`,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
		}, h.mode),
		newTool(&mcp.Tool{
			Name:  "claude_direct_query",
			Title: "One-off query",
			Description: `One-off prompt in a temporary session; parameters as for claude_chat_query, claude_session_create. ` +
				`Example: {"prompt": "Summarise README.md", "cwd": "/repo"}`,
			// No annotations: the defaults (destructive, open world) are right.
		}, h.direct),
		newTool(&mcp.Tool{
			Name:        "claude_session_list",
			Title:       "Sessions",
			Description: `List sessions. Example: {"state": "idle"}`,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		}, h.list),
		newTool(&mcp.Tool{
			Name:        "claude_chat_wait",
			Title:       "Wait for a query",
			Description: `Get a query's result after status running.`,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		}, h.wait),
		newTool(&mcp.Tool{
			Name:        "claude_session_history",
			Title:       "History",
			Description: `Page through a session's conversation. Example: {"sessionId": "4b1c…"}`,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		}, h.history),
		h.rewindTool(),
		newTool(&mcp.Tool{
			Name:  "claude_session_land",
			Title: "Land",
			Description: `Land a worktree session's work in its origin branch, or discard it; then worktree, branch, session end. ` +
				`Diff: resource …/{id}/diff. Example: {"sessionId": "4b1c…", "how": "squash"}`,
			// No annotations: the defaults are right (destructive; open
			// world: a pull request goes to the remote).
		}, h.land),
	}
}

// tool is one registration; add binds the typed handler.
type tool struct {
	def *mcp.Tool
	add func(*mcp.Server)
	// input is what toolargs.Check checks every call against:
	// def.InputSchema, or claude_direct_query's with its enumerations.
	input *jsonschema.Schema
}

func newTool[In, Out any](def *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) tool {
	in := mustSchema[In]()
	lean(in)
	in.AdditionalProperties = nil // unknown arguments are refused by toolargs.Check
	for name, prop := range in.Properties {
		if patch := inputProperties[name]; patch != nil {
			patch(prop)
		}
	}
	check := in
	if _, ok := any(*new(In)).(DirectInput); ok {
		in.Required = []string{"prompt"}
		check, in = in, directSchema(in.CloneSchemas())
	}
	if p := in.Properties["images"]; p != nil && p.Items != nil {
		// Listed: what an item is (its description names the fields);
		// checked: the fields too.
		if in == check {
			in = in.CloneSchemas()
		}
		in.Properties["images"].Items = &jsonschema.Schema{Type: "object"}
	}
	def.InputSchema = in
	out := mustSchema[Out]()
	shape(out, outputKeys[reflect.TypeFor[Out]()])
	def.OutputSchema = out
	return tool{def: def, add: func(s *mcp.Server) { mcp.AddTool(s, def, encodedOnce(h)) }, input: check}
}

// encodedOnce is h with its output encoded once, by the handler: the SDK,
// given a typed output, encodes it, decodes the JSON again and validates it
// against the output schema on every call. For a query that is a 60,000
// character answer passed over three more times, and its garbage, 1 to 4 ms
// of a 2 MB turn. The outputs match their schemas by construction (the
// schemas are made from these types); the tests validate every structured
// result they get against the tool's output schema (fakeServer.call). What
// the SDK did besides is done here alike: no structured content beside
// input requests, and the JSON as the text when the handler set none.
func encodedOnce[In, Out any](h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, err := encoded(h(ctx, req, in))
		return res, nil, err
	}
}

// encoded is a handler's result with its output encoded once (see
// encodedOnce), for the typed tools and the agent tools alike.
func encoded[Out any](res *mcp.CallToolResult, out Out, err error) (*mcp.CallToolResult, error) {
	if err != nil || (res != nil && res.InputRequests != nil) {
		return res, err
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	res.StructuredContent = json.RawMessage(data)
	if res.Content == nil {
		res.Content = []mcp.Content{&mcp.TextContent{Text: string(data)}}
	}
	return res, nil
}

// Tools returns the tool definitions, for documentation and tests.
func Tools() []*mcp.Tool {
	var out []*mcp.Tool
	for _, t := range (&handlers{}).tools() {
		out = append(out, t.def)
	}
	return out
}

// directSchema is claude_direct_query's input schema: claude_chat_query's
// parameters and claude_session_create's options, derived from the same
// types, but with their types alone: the descriptions and enumerations are
// said once, in those two tools (its description points there), so that
// listing every option costs a host session's context as little as it can.
// Its calls are checked against the schema with the enumerations (an
// onUsageLimit, a permissionMode is refused before the handler, as in
// those tools).
func directSchema(s *jsonschema.Schema) *jsonschema.Schema {
	typesOnly(s)
	s.Required = []string{"prompt"}
	return s
}

// typesOnly drops the descriptions and enumerations of s and of every
// schema in it.
func typesOnly(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	s.Description, s.Enum = "", nil
	for _, p := range s.Properties {
		typesOnly(p)
	}
	typesOnly(s.Items)
	typesOnly(s.AdditionalProperties)
}

// lean drops what a property's name already says: nullability of lists,
// and additionalProperties:false (the server refuses unknown arguments
// itself; see toolargs.Check).
func lean(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	if s.AdditionalProperties != nil && reflect.DeepEqual(s.AdditionalProperties, falseSchema) {
		s.AdditionalProperties = nil
	}
	for _, p := range s.Properties {
		lean(p)
	}
	lean(s.Items)
}

var falseSchema = &jsonschema.Schema{Not: &jsonschema.Schema{}}

// shape reduces an output schema to its shape: the fields a caller reads
// first (keys; every required field when none are given), typed, nested
// values typed but not described; the other fields are allowed without
// being listed.
func shape(s *jsonschema.Schema, keys []string) {
	if keys == nil {
		keys = s.Required
	}
	keep := map[string]*jsonschema.Schema{}
	for _, name := range keys {
		p := s.Properties[name]
		if p == nil {
			panic("output schema has no field " + name)
		}
		flat(p)
		keep[name] = p
	}
	s.Properties, s.Required = keep, nil
	if len(keep) == 0 {
		s.Properties = nil // an object, its fields unlisted
	}
	s.Description, s.AdditionalProperties = "", nil
}

// outputKeys are the fields an output schema lists, by result type: what
// a caller reads first.
var outputKeys = map[reflect.Type][]string{
	reflect.TypeFor[QueryOutput]():     {"finalText"},
	reflect.TypeFor[CreateOutput]():    {"sessionId"},
	reflect.TypeFor[CloseOutput]():     {"closed"},
	reflect.TypeFor[SteerOutput]():     {"sent"},
	reflect.TypeFor[InterruptOutput](): {"interrupted"},
	reflect.TypeFor[ModelOutput]():     {"resolvedModel"},
	reflect.TypeFor[ModeOutput]():      {"permissionMode"},
	reflect.TypeFor[HistoryOutput]():   {"entries"},
	reflect.TypeFor[ListOutput]():      {"sessions"},
	reflect.TypeFor[RewindOutput]():    {"files"},
	reflect.TypeFor[LandOutput]():      {}, // its fields unlisted, for size
}

func flat(s *jsonschema.Schema) {
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	*s = jsonschema.Schema{Type: s.Type, Types: s.Types}
}

// inputProperties refine derived input schemas by parameter name: the one
// definition of each pattern and enumeration the tools share.
var inputProperties = map[string]func(*jsonschema.Schema){
	"permissionMode": func(s *jsonschema.Schema) { s.Enum = enumOf(options.PermissionModes) },
	"effort":         func(s *jsonschema.Schema) { s.Enum = enumOf(options.EffortLevels) },
	"onUsageLimit":   func(s *jsonschema.Schema) { s.Enum = enumOf(sessions.OnLimits) },
	"how":            func(s *jsonschema.Schema) { s.Enum = enumOf(worktree.Hows) },
	"settingSources": func(s *jsonschema.Schema) {
		s.Items = &jsonschema.Schema{Type: "string", Enum: enumOf(options.SettingSources)}
	},
}

// schemaTypes: raw JSON in results and options is always an object (a
// tool's input, an MCP server's entry).
var schemaTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Type: "object"},
	reflect.TypeFor[worktree.Option](): {Type: "string"},
}

func enumOf(vals []string) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out
}

// mustSchema derives a schema from T; a failure is a programming error.
func mustSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		panic(fmt.Sprintf("schema for %T: %v", *new(T), err))
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// legacyForm refuses the forms worktree and settings took before each had
// one type, saying the form they take now (a toolargs.Legacy).
func legacyForm(name string, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	switch name {
	case "worktree":
		if w := string(raw); w == "true" || w == "false" {
			return fmt.Errorf("worktree %s: worktree is a string: a name, or %q for one the server picks (leave it out for none)", w, worktree.Auto)
		}
	case "settings":
		var path string
		if bytes.HasPrefix(raw, []byte(`"`)) && json.Unmarshal(raw, &path) == nil {
			return fmt.Errorf("settings %q: settings is an object; pass the path of a settings file as settingsFile", path)
		}
	}
	return nil
}
