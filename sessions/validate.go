package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// PermissionModes are the CLI's permission modes, in the order documented.
var PermissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"}

// ModelPattern is the form of a model alias or id.
const ModelPattern = `^[A-Za-z0-9._\-\[\]]{1,100}$`

var modelRE = regexp.MustCompile(ModelPattern)

// ValidateModel checks the form of a model alias or id; the CLI accepts any
// string and fails only later, at the API.
func ValidateModel(model string) error {
	if model == "" || modelRE.MatchString(model) {
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
	if err := noControl(what, dir); err != nil {
		return "", err
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s %q is not an absolute path: pass an absolute directory such as /home/me/project", what, dir)
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

// noControl refuses NUL and other control characters, which no path, name
// or id has and which would reach the CLI's arguments.
func noControl(what, v string) error {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("invalid %s %q: it contains a control character", what, v)
		}
	}
	return nil
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// ValidateToolNames checks names of built-in tools such as Read or Bash.
func ValidateToolNames(what string, names []string) error {
	for _, n := range names {
		if !toolNameRE.MatchString(n) {
			return fmt.Errorf("invalid %s entry %q: use built-in tool names such as Read, Grep, Edit or Bash", what, n)
		}
	}
	return nil
}

var toolRuleRE = regexp.MustCompile(`^[A-Za-z0-9_\-.*]+(\(.*\))?$`)

// ValidateToolRules checks permission rules such as "Bash", "Bash(git:*)" or
// "mcp__srv__tool".
func ValidateToolRules(what string, rules []string) error {
	for _, r := range rules {
		if !toolRuleRE.MatchString(r) || strings.ContainsRune(r, '\n') {
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

// mcpConfig is the --mcp-config document for servers; with strict and no
// servers, an empty one, so that --strict-mcp-config strips every server
// explicitly.
func mcpConfig(servers map[string]json.RawMessage, strict bool) string {
	if len(servers) == 0 && !strict {
		return ""
	}
	if servers == nil {
		servers = map[string]json.RawMessage{}
	}
	doc, _ := json.Marshal(map[string]any{"mcpServers": servers}) // RawMessages were validated
	return string(doc)
}
