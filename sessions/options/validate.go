package options

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// The form of each option: what the CLI would take, checked before any
// policy (package policy) and before a process starts. These checks read
// nothing but the options (and, for directories and files, whether they
// exist).

// PermissionModes are the CLI's permission modes, in the order documented
// (defined in claudeagent).
var PermissionModes = claudeagent.PermissionModes

// ModelPattern is the form of a model alias or id.
const ModelPattern = `^[A-Za-z0-9._\-\[\]]{1,100}$`

var modelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(ModelPattern) })

// ValidateModel checks the form of a model alias or id; the CLI accepts any
// string and fails only later, at the API.
func ValidateModel(model string) error {
	if model == "" || modelRE().MatchString(model) {
		return nil
	}
	return fmt.Errorf("invalid model %q: use an alias (opus, sonnet, haiku) or a model id such as claude-sonnet-4-5 (letters, digits, '.', '-', '_', '[', ']')", model)
}

// ValidatePermissionMode checks mode against [PermissionModes]; "" is valid
// and means the CLI's default.
func ValidatePermissionMode(mode string) error {
	if mode == "" || slices.Contains(PermissionModes, mode) {
		return nil
	}
	return fmt.Errorf("invalid permissionMode %q: use one of %s", mode, strings.Join(PermissionModes, ", "))
}

// ValidateDir checks that dir is an absolute path to an existing directory
// and returns it cleaned. what names the parameter in the error.
func ValidateDir(what, dir string) (string, error) {
	dir, err := FormPath(what, dir)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s %q does not exist (or no longer does: deleted or moved): pass an existing directory", what, dir)
	}
	if err != nil {
		return "", fmt.Errorf("%s %q cannot be used: %v", what, dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s %q is not a directory: pass a directory, not a file", what, dir)
	}
	return filepath.Clean(dir), nil
}

// FormPath checks a directory's path by its form alone (no control
// character, absolute) and cleans it; whether it exists is for the policy
// gate to tell, once the path is one the caller may use (Validate's
// options: telling "does not exist" of a path outside the allowed roots
// would let a caller probe the server's files).
func FormPath(what, dir string) (string, error) {
	if err := NoControl(what, dir); err != nil {
		return "", err
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s %q is not an absolute path: pass an absolute directory such as /home/me/project", what, dir)
	}
	return filepath.Clean(dir), nil
}

// NoControl refuses NUL and other control characters, which no path, name
// or id has and which would reach the CLI's arguments.
func NoControl(what, v string) error {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("invalid %s %q: it contains a control character", what, v)
		}
	}
	return nil
}

var toolNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`) })

// ValidateToolNames checks names of built-in tools such as Read or Bash.
func ValidateToolNames(what string, names []string) error {
	for _, n := range names {
		if !toolNameRE().MatchString(n) {
			return fmt.Errorf("invalid %s entry %q: use built-in tool names such as Read, Grep, Edit or Bash", what, n)
		}
	}
	return nil
}

var toolRuleRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_\-.*]+(\(.*\))?$`) })

// ValidateToolRules checks permission rules such as "Bash", "Bash(git:*)" or
// "mcp__srv__tool".
func ValidateToolRules(what string, rules []string) error {
	for _, r := range rules {
		if !toolRuleRE().MatchString(r) || strings.ContainsRune(r, '\n') {
			return fmt.Errorf("invalid %s entry %q: use a tool name such as Bash or Edit, optionally with a rule in parentheses such as Bash(git:*)", what, r)
		}
	}
	return nil
}

// ValidateMCPServers checks an object in the CLI's mcpServers form (name →
// {command, args, env} or {type: "http"|"sse", url}).
func ValidateMCPServers(servers map[string]json.RawMessage) error {
	for name, raw := range servers {
		if name == "" {
			return fmt.Errorf("invalid mcpServers: a server has an empty name")
		}
		var s struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("invalid mcpServers[%q]: %v; expected {\"command\": \"…\", \"args\": […]} or {\"type\": \"http\", \"url\": \"…\"}", name, err)
		}
		switch s.Type {
		case "", "stdio":
			if s.Command == "" {
				return fmt.Errorf("invalid mcpServers[%q]: a stdio server needs \"command\"", name)
			}
		case "http", "sse":
			if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				return fmt.Errorf("invalid mcpServers[%q]: a %s server needs an http(s) \"url\"", name, s.Type)
			}
		default:
			return fmt.Errorf("invalid mcpServers[%q]: type %q is not one of stdio, http, sse", name, s.Type)
		}
	}
	return nil
}

// MCPConfig is the --mcp-config document for o's mcpServers; with
// strictMcpConfig and no servers, an empty one, so that
// --strict-mcp-config strips every server explicitly.
func MCPConfig(o *CreateOptions) string {
	servers := o.MCPServers
	if len(servers) == 0 && !o.StrictMCPConfig {
		return ""
	}
	if servers == nil {
		servers = map[string]json.RawMessage{}
	}
	doc, _ := json.Marshal(map[string]any{"mcpServers": servers}) // RawMessages were validated
	return string(doc)
}

// EffortLevels are the CLI's --effort values (defined in claudeagent).
var EffortLevels = claudeagent.EffortLevels

// ValidateEffort checks an effort level; "" is the CLI's default.
func ValidateEffort(effort string) error {
	if effort == "" || slices.Contains(EffortLevels, effort) {
		return nil
	}
	return fmt.Errorf("invalid effort %q: use one of %s", effort, strings.Join(EffortLevels, ", "))
}

// SettingSources are the CLI's --setting-sources values.
var SettingSources = []string{"user", "project", "local"}

var agentNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })

// ValidAgentName reports whether name has the form of an agent name the
// options accept (agents' keys, agent).
func ValidAgentName(name string) bool { return agentNameRE().MatchString(name) }

// ValidateDelegation checks the options that shape what a session does:
// effort, structured output, budget, custom agents, settings (an object)
// or a settings file, setting sources, fallback model and name.
func ValidateDelegation(o *CreateOptions) error {
	if err := ValidateEffort(o.Effort); err != nil {
		return err
	}
	if len(o.JSONSchema) > 0 {
		if err := validateJSONSchema(o.JSONSchema); err != nil {
			return err
		}
	}
	if o.MaxBudgetUSD < 0 {
		return fmt.Errorf("invalid maxBudgetUsd %v: use a positive amount in USD, or omit it", o.MaxBudgetUSD)
	}
	if len(o.Agents) > 0 {
		var agents map[string]map[string]json.RawMessage
		if err := json.Unmarshal(o.Agents, &agents); err != nil {
			return fmt.Errorf("invalid agents: %v; expected {\"name\": {\"description\": \"…\", \"prompt\": \"…\"}}", err)
		}
		for name, a := range agents {
			if !agentNameRE().MatchString(name) {
				return fmt.Errorf("invalid agents name %q: use letters, digits, '.', '_' and '-'", name)
			}
			for _, field := range []string{"description", "prompt"} {
				var v string
				if json.Unmarshal(a[field], &v) != nil || strings.TrimSpace(v) == "" {
					return fmt.Errorf("invalid agents[%q]: %q must be a non-empty string", name, field)
				}
			}
			if raw, ok := a["tools"]; ok {
				var tools []string
				if json.Unmarshal(raw, &tools) != nil {
					return fmt.Errorf("invalid agents[%q]: \"tools\" must be a list of tool names", name)
				}
			}
			if raw, ok := a["model"]; ok {
				var m string
				if json.Unmarshal(raw, &m) != nil || ValidateModel(m) != nil {
					return fmt.Errorf("invalid agents[%q]: \"model\" must be a model alias or id", name)
				}
			}
		}
	}
	if len(o.Settings) > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(o.Settings, &obj) != nil {
			return errors.New("invalid settings: pass a settings object such as {\"permissions\": {\"deny\": [\"Bash\"]}}, or the absolute path of a settings file as settingsFile")
		}
	}
	if o.SettingsFile != "" {
		if len(o.Settings) > 0 {
			return errors.New("settings and settingsFile both given: the CLI takes one, so pass the settings as an object or as a file")
		}
		if err := validateSettingsFile(o.SettingsFile); err != nil {
			return err
		}
	}
	for _, src := range o.SettingSources {
		if !slices.Contains(SettingSources, src) {
			return fmt.Errorf("invalid settingSources entry %q: use user, project or local ([] loads none)", src)
		}
	}
	if o.Agent != "" && !agentNameRE().MatchString(o.Agent) {
		return fmt.Errorf("invalid agent %q: name one of the agents (letters, digits, '.', '_' and '-'; at most 64)", o.Agent)
	}
	if o.FallbackModel != "" {
		if err := ValidateModel(o.FallbackModel); err != nil {
			return fmt.Errorf("invalid fallbackModel: %w", err)
		}
	}
	if err := NoControl("name", o.Name); err != nil {
		return err
	}
	if len(o.Name) > 100 {
		return fmt.Errorf("invalid name: %d characters, at most 100", len(o.Name))
	}
	return nil
}

// MoveSettingsPath moves a settings file given in settings (a JSON string,
// as the option took before settingsFile) to settingsFile.
func MoveSettingsPath(o *CreateOptions) error {
	var path string
	if len(o.Settings) == 0 || json.Unmarshal(o.Settings, &path) != nil {
		return nil
	}
	if o.SettingsFile != "" {
		return errors.New("settings and settingsFile both given: the CLI takes one, so pass the settings as an object or as a file")
	}
	o.Settings, o.SettingsFile = nil, path
	if slices.Contains(o.Operator, "settings") {
		o.Operator = append(o.Operator, "settingsFile")
	}
	return nil
}

// validateSettingsFile checks a settingsFile: an absolute path to a file.
func validateSettingsFile(path string) error {
	if err := NoControl("settingsFile", path); err != nil {
		return err
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("invalid settingsFile %q: not an absolute path (or pass the settings as an object in settings)", path)
	}
	return nil // whether it exists is told once the gate admits it (see FormPath)
}

// validateJSONSchema checks a --json-schema: a JSON Schema object whose
// type is object (it becomes a tool's input schema), that resolves.
func validateJSONSchema(raw json.RawMessage) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("invalid jsonSchema: %v; pass a JSON Schema object such as {\"type\": \"object\", \"properties\": {\"answer\": {\"type\": \"string\"}}}", err)
	}
	if s.Type != "object" {
		return fmt.Errorf("invalid jsonSchema: its type must be \"object\" (got %q); wrap other values in an object property", s.Type)
	}
	if _, err := s.Resolve(nil); err != nil {
		return fmt.Errorf("invalid jsonSchema: %v", err)
	}
	var doc any
	_ = json.Unmarshal(raw, &doc)
	return checkSchemaTypes("jsonSchema", doc)
}

var schemaTypeNames = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// checkSchemaTypes checks every "type" in a schema names a JSON Schema type
// (the resolver does not).
func checkSchemaTypes(where string, v any) error {
	switch x := v.(type) {
	case map[string]any:
		switch t := x["type"].(type) {
		case string:
			if !slices.Contains(schemaTypeNames, t) {
				return fmt.Errorf("invalid jsonSchema: %s has type %q; use %s", where, t, strings.Join(schemaTypeNames, ", "))
			}
		case []any:
			for _, e := range t {
				if s, ok := e.(string); !ok || !slices.Contains(schemaTypeNames, s) {
					return fmt.Errorf("invalid jsonSchema: %s has type %v; use %s", where, e, strings.Join(schemaTypeNames, ", "))
				}
			}
		}
		for k, sub := range x {
			if k == "enum" || k == "const" || k == "examples" || k == "default" {
				continue // values, not schemas
			}
			if err := checkSchemaTypes(where+"."+k, sub); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := checkSchemaTypes(where, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// Validate checks the form of every option of o, and normalises it: its
// cwd and addDirs cleaned (cwd must be set), a settings file passed as
// settings moved to settingsFile; last, that the options fit on the CLI's
// command line (ValidateArgSizes).
func Validate(o *CreateOptions) error {
	var err error
	if o.Cwd, err = FormPath("cwd", o.Cwd); err != nil {
		return err
	}
	for i, d := range o.AddDirs {
		if o.AddDirs[i], err = FormPath("addDirs entry", d); err != nil {
			return err
		}
	}
	if err := ValidateModel(o.Model); err != nil {
		return err
	}
	if err := ValidatePermissionMode(o.PermissionMode); err != nil {
		return err
	}
	if err := ValidateToolRules("allowedTools", o.AllowedTools); err != nil {
		return err
	}
	if err := ValidateToolRules("disallowedTools", o.DisallowedTools); err != nil {
		return err
	}
	if err := ValidateToolNames("tools", o.Tools); err != nil {
		return err
	}
	if o.MaxTurns < 0 {
		return fmt.Errorf("invalid maxTurns %d: use a positive number, or omit it for no limit", o.MaxTurns)
	}
	if o.ForkSession && o.ResumeSessionID == "" {
		return errors.New("forkSession needs resumeSessionId: name the Claude session to fork")
	}
	if o.ResumeSessionID != "" && uuid.Validate(o.ResumeSessionID) != nil {
		return fmt.Errorf("invalid resumeSessionId %q: it must be a Claude session id (a UUID, as returned in claudeSessionId)", o.ResumeSessionID)
	}
	if err := ValidateMCPServers(o.MCPServers); err != nil {
		return err
	}
	if err := MoveSettingsPath(o); err != nil {
		return err
	}
	if err := ValidateDelegation(o); err != nil {
		return err
	}
	for _, p := range o.Plugins {
		if _, err := FormPath("plugins entry", p); err != nil {
			return err
		}
	}
	return ValidateArgSizes(o)
}
