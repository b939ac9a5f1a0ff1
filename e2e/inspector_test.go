package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
)

// unportableEnv makes the test binary serve unportableServer instead of
// running tests (see TestMain): the control of
// TestInspectorSchemaPortability.
const unportableEnv = "CLAUDE_AGENT_MCP_TEST_UNPORTABLE_SERVER"

// unportableServer serves, on stdio, one tool whose input schema has the
// type union worktree had: the Inspector's portability check must report it.
func unportableServer() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "unportable", Version: "1"}, nil)
	in := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"worktree": {Types: []string{"boolean", "string"}},
	}}
	srv.AddTool(&mcp.Tool{Name: "union", Description: "A tool with a type union.", InputSchema: in},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
}

// schemaFinding is one finding of the Inspector's schema portability check.
type schemaFinding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Schema   string `json:"schema"`
	Path     string `json:"path"`
	Issue    string `json:"issue"`
}

// inspectorSchemaCheck runs the MCP Inspector's schema portability check on
// the stdio server command (mcp-inspector --cli … --method tools/list
// --strict --format json): it lints every tool's input and output schema
// (rules type-union, untyped-schema and remote-ref are warnings,
// boolean-schema an error, which also makes it exit 6) and puts the
// findings in the JSON envelope's schemaFindings, the full report on
// stderr. It returns the tools listed and the findings, by tool.
func inspectorSchemaCheck(t *testing.T, insp string, env []string, command ...string) (tools []string, findings map[string][]schemaFinding) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--cli"}
	for _, kv := range env {
		args = append(args, "-e", kv) // the Inspector gives the server a minimal environment
	}
	args = append(append(args, command...), "--method", "tools/list", "--strict", "--format", "json")
	cmd := exec.CommandContext(ctx, insp, args...)
	home := t.TempDir()
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "USERPROFILE="+home) // the Inspector keeps state under $HOME
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var envelope struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
		SchemaFindings []struct {
			ToolName string          `json:"toolName"`
			Findings []schemaFinding `json:"findings"`
		} `json:"schemaFindings"`
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &envelope); jerr != nil {
		t.Fatalf("inspector %s: %v; its output is not the JSON envelope (%v):\n%s\nstderr:\n%s", strings.Join(args, " "), err, jerr, tail(stdout.String(), 2000), tail(stderr.String(), 4000))
	}
	for _, tool := range envelope.Result.Tools {
		tools = append(tools, tool.Name)
	}
	findings = map[string][]schemaFinding{}
	for _, r := range envelope.SchemaFindings {
		findings[r.ToolName] = append(findings[r.ToolName], r.Findings...)
	}
	if err != nil && len(findings) == 0 {
		t.Fatalf("inspector %s: %v with no finding:\n%s", strings.Join(args, " "), err, tail(stderr.String(), 4000))
	}
	return tools, findings
}

// TestInspectorSchemaPortability runs the MCP Inspector's strict schema
// portability check on the binary over stdio: every tool listed, no
// finding, not even a warning. A control server with a type union shows
// that the check runs and reports one.
func TestInspectorSchemaPortability(t *testing.T) {
	insp := inspectorBin(t)
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, findings := inspectorSchemaCheck(t, insp, []string{unportableEnv + "=1"}, exe)
	if f := findings["union"]; len(f) != 1 || f[0].Rule != "type-union" || f[0].Path != "properties.worktree" {
		t.Fatalf("the control's type union: findings %+v, want one type-union at properties.worktree", findings)
	}

	dir := t.TempDir()
	fake := filepath.Join(dir, "claude") // for the check of the CLI at start
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '2.1.330 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tools, findings := inspectorSchemaCheck(t, insp, []string{"CLAUDE_AGENT_MCP_CLAUDE_PATH=" + fake,
		"CLAUDE_AGENT_MCP_STATE_FILE=" + filepath.Join(dir, "state.json")}, serverBinary(t))
	if want := len(mcptools.Tools()); len(tools) != want {
		t.Errorf("the Inspector lists %d tools, want %d: %v", len(tools), want, tools)
	}
	for tool, fs := range findings {
		for _, f := range fs {
			t.Errorf("%s: %s %s at %s.%s: %s", tool, f.Severity, f.Rule, f.Schema, f.Path, f.Issue)
		}
	}
}
