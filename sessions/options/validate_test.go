package options

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestValidateModel(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "opus", "sonnet", "haiku", "claude-sonnet-4-5", "claude-opus-4-8[1m]", "claude-3.5_x", strings.Repeat("a", 100)} {
		if err := ValidateModel(ok); err != nil {
			t.Errorf("ValidateModel(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"has space", "semi;colon", "quote\"", "new\nline", "slash/x", strings.Repeat("a", 101), "émoji"} {
		err := ValidateModel(bad)
		if err == nil || !strings.Contains(err.Error(), "invalid model") || !strings.Contains(err.Error(), "opus, sonnet, haiku") {
			t.Errorf("ValidateModel(%q) = %v", bad, err)
		}
	}
}

func TestValidatePermissionMode(t *testing.T) {
	t.Parallel()
	for _, ok := range append([]string{""}, PermissionModes...) {
		if err := ValidatePermissionMode(ok); err != nil {
			t.Errorf("ValidatePermissionMode(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"Default", "bypass", "yolo", " plan", "acceptedits"} {
		err := ValidatePermissionMode(bad)
		if err == nil || !strings.Contains(err.Error(), strings.Join(PermissionModes, ", ")) {
			t.Errorf("ValidatePermissionMode(%q) = %v", bad, err)
		}
	}
}

func TestValidateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in, want, errPart string
	}{
		{dir, dir, ""},
		{dir + "/./sub/..", dir, ""},
		{dir + "/", dir, ""},
		{"relative/dir", "", "not an absolute path"},
		{"", "", "not an absolute path"},
		{filepath.Join(dir, "missing"), "", "does not exist"},
		{file, "", "not a directory"},
	} {
		got, err := ValidateDir("cwd", tc.in)
		switch {
		case tc.errPart == "" && (err != nil || got != tc.want):
			t.Errorf("ValidateDir(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.errPart != "" && (err == nil || !strings.Contains(err.Error(), tc.errPart) || !strings.HasPrefix(err.Error(), "cwd ")):
			t.Errorf("ValidateDir(%q) = %q, %v; want an error about %q", tc.in, got, err, tc.errPart)
		}
	}
}

func TestValidateToolRules(t *testing.T) {
	t.Parallel()
	if err := ValidateToolRules("allowedTools", []string{"Bash", "Bash(git:*)", "Edit", "mcp__srv__tool", "Read(./src/**)", "WebFetch(domain:example.com)", "*"}); err != nil {
		t.Errorf("valid rules: %v", err)
	}
	if err := ValidateToolRules("allowedTools", nil); err != nil {
		t.Errorf("no rules: %v", err)
	}
	for _, bad := range []string{"", "Bash git", "Bash(x)y", "Bash(\n)", "Ba,sh", "(x)", "Bash;rm"} {
		err := ValidateToolRules("disallowedTools", []string{"Edit", bad})
		if err == nil || !strings.Contains(err.Error(), "invalid disallowedTools entry") {
			t.Errorf("ValidateToolRules(%q) = %v", bad, err)
		}
	}
}

func TestValidateMCPServers(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name    string
		servers map[string]json.RawMessage
		errPart string
	}{
		{"none", nil, ""},
		{"stdio", map[string]json.RawMessage{"fs": raw(`{"command":"npx","args":["-y","srv"],"env":{"A":"b"}}`)}, ""},
		{"stdio_typed", map[string]json.RawMessage{"fs": raw(`{"type":"stdio","command":"srv"}`)}, ""},
		{"http", map[string]json.RawMessage{"web": raw(`{"type":"http","url":"https://example.com/mcp"}`)}, ""},
		{"sse", map[string]json.RawMessage{"web": raw(`{"type":"sse","url":"http://localhost:1/sse"}`)}, ""},
		{"no_command", map[string]json.RawMessage{"fs": raw(`{"args":["x"]}`)}, `a stdio server needs "command"`},
		{"http_no_url", map[string]json.RawMessage{"web": raw(`{"type":"http"}`)}, `needs an http(s) "url"`},
		{"http_bad_url", map[string]json.RawMessage{"web": raw(`{"type":"http","url":"ftp://x"}`)}, `needs an http(s) "url"`},
		{"bad_type", map[string]json.RawMessage{"x": raw(`{"type":"websocket","url":"https://x"}`)}, "not one of stdio, http, sse"},
		{"not_object", map[string]json.RawMessage{"x": raw(`"npx srv"`)}, `invalid mcpServers["x"]`},
		{"bad_args", map[string]json.RawMessage{"x": raw(`{"command":"a","args":"b"}`)}, `invalid mcpServers["x"]`},
		{"empty_name", map[string]json.RawMessage{"": raw(`{"command":"a"}`)}, "empty name"},
	} {
		err := ValidateMCPServers(tc.servers)
		doc := MCPConfig(&CreateOptions{MCPServers: tc.servers})
		if tc.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(tc.servers) == 0 {
			if doc != "" {
				t.Errorf("%s: doc = %q", tc.name, doc)
			}
			continue
		}
		var parsed struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(doc), &parsed); err != nil || len(parsed.MCPServers) != len(tc.servers) {
			t.Errorf("%s: doc = %s (%v)", tc.name, doc, err)
		}
		for k, v := range tc.servers {
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(parsed.MCPServers[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: server %q = %s, want %s", tc.name, k, parsed.MCPServers[k], v)
			}
		}
	}
}
