package claudeagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Each process has a private directory of its own, removed at its end:
// its temporary directory (TMPDIR, CLAUDE_CODE_TMPDIR) and the documents
// its options carry (the MCP configuration, a settings object), which the
// CLI reads from files there rather than from its command line, where
// every process of the machine could read them. The text options (system
// prompts, agents, a JSON schema) go over stdin, in initialize (see
// [Process.Initialize]). In the jail ([Options.Jail]) a process sees its
// own private directory alone: the others beside it are hidden.

// Names in a private directory.
const (
	privateTmp      = "tmp"
	mcpConfigFile   = "mcp-config.json"
	settingsFile    = "settings.json"
	privatePrefix   = "p-"
	privateRootName = "claude-agent-mcp-"
)

// privateRoot is where the private directories are made: the system's
// temporary directory's claude-agent-mcp-<uid>, this user's own (made
// 0700, not a link); when someone else holds that name, a fresh directory.
var privateRoot = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(os.TempDir(), privateRootName+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("making the processes' private directories' root: %w", err)
	}
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && ownedPrivate(fi) {
		return dir, nil
	}
	dir, err := os.MkdirTemp("", privateRootName)
	if err != nil {
		return "", fmt.Errorf("making the processes' private directories' root: %w", err)
	}
	return dir, nil
})

// makePrivate makes a process's private directory, with its temporary
// directory in it.
func makePrivate() (string, error) {
	root, err := privateRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(root, privatePrefix)
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, privateTmp), 0o700)
	}
	if err != nil {
		removePrivate(dir)
		return "", fmt.Errorf("making the process's private directory: %w", err)
	}
	return dir, nil
}

// removePrivate removes a process's private directory ("" none).
func removePrivate(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// isJSONObject reports whether s is a JSON document rather than a path.
func isJSONObject(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "{") }

// settingsObject is o.Settings when it is an object (a JSON string in it is
// a file's path, as sessions persisted before SettingsFile carry).
func (o *Options) settingsObject() (raw json.RawMessage, path string) {
	if len(o.Settings) == 0 {
		return nil, ""
	}
	if json.Unmarshal(o.Settings, &path) == nil {
		return nil, path
	}
	return o.Settings, ""
}

// writeDocuments writes o's documents into its private directory dir.
func (o *Options) writeDocuments(dir string) error {
	write := func(name string, data []byte) error {
		return os.WriteFile(filepath.Join(dir, name), data, 0o600)
	}
	if isJSONObject(o.MCPConfig) {
		if err := write(mcpConfigFile, []byte(o.MCPConfig)); err != nil {
			return fmt.Errorf("writing the MCP configuration: %w", err)
		}
	}
	if raw, _ := o.settingsObject(); raw != nil {
		if err := write(settingsFile, []byte(compactJSON(raw))); err != nil {
			return fmt.Errorf("writing the settings: %w", err)
		}
	}
	return nil
}

// document is the file of a document named name: in the private directory
// once the process has one, else the bare name (what Args shows before a
// start, for a spare's key).
func (o *Options) document(name string) string {
	if o.private == "" {
		return name
	}
	return filepath.Join(o.private, name)
}

// initialize is req with what o gives by initialize filled in where req
// leaves it empty: the system prompts, the agents and the JSON schema.
func (o *Options) initialize(req InitializeRequest) InitializeRequest {
	if req.SystemPrompt == "" {
		req.SystemPrompt = o.SystemPrompt
	}
	if req.AppendSystemPrompt == "" {
		req.AppendSystemPrompt = o.AppendSystemPrompt
	}
	if len(req.Agents) == 0 && len(o.Agents) > 0 {
		req.Agents = json.RawMessage(compactJSON(o.Agents))
	}
	if len(req.JSONSchema) == 0 && len(o.JSONSchema) > 0 {
		req.JSONSchema = json.RawMessage(compactJSON(o.JSONSchema))
	}
	return req
}
