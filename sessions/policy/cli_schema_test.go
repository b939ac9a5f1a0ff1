package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
)

// pinnedCLIs are the packages of the CLIs scripts/test installs, relative
// to the module root: the newest supported and the oldest.
var pinnedCLIs = []string{
	filepath.Join(".tools", "node_modules", "@anthropic-ai", "claude-code"),
	filepath.Join(".tools", "node_modules", "claude-code-oldest"),
}

// schemaExpect is what the extractor must find of one document in every
// pinned CLI: at least min keys, among them these (so that a broken
// extractor fails instead of passing with nothing to check).
type schemaExpect struct {
	min  int
	keys []string
}

var (
	settingsExpect    = schemaExpect{100, []string{"$schema", "apiKeyHelper", "hooks", "env", "permissions", "statusLine", "enabledPlugins"}}
	permissionsExpect = schemaExpect{6, []string{"allow", "deny", "ask", "defaultMode", "additionalDirectories"}}
	agentExpect       = schemaExpect{14, []string{"description", "prompt", "tools", "hooks", "mcpServers", "permissionMode"}}
	transportExpect   = map[string]schemaExpect{
		"stdio":           {6, []string{"type", "command", "args", "env"}},
		"sse":             {9, []string{"type", "url", "headers", "headersHelper", "oauth", "tools"}},
		"http":            {9, []string{"type", "url", "headers", "headersHelper", "oauth", "tools"}},
		"streamable-http": {9, []string{"type", "url", "headers", "headersHelper", "oauth", "tools"}},
		"ws":              {6, []string{"type", "url", "headers", "headersHelper"}},
	}
)

// TestCLISchemaClassified reads the schemas of the CLI's documents out of
// both pinned CLIs and fails on every settings key, permissions key, agent
// field and field of an MCP server entry (stdio, sse, http, ws) that the
// gate's tables (fields.go) do not classify: a CLI update cannot add a
// helper the gate lets through unseen.
func TestCLISchemaClassified(t *testing.T) {
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pinnedCLIs {
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			dir := filepath.Join(root, pkg)
			bin := filepath.Join(dir, "bin", "claude.exe")
			if _, err := os.Stat(bin); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("pinned CLI missing (run scripts/test to install it) and CI=true: %v", err)
				}
				t.Skipf("pinned CLI missing (scripts/test installs it): %v", err)
			}
			version := packageVersion(t, dir)
			s := extractSchema(mapFile(t, bin))
			checkSchema(t, version, s)
		})
	}
}

// checkSchema checks what was extracted from CLI version: plausible, and
// classified.
func checkSchema(t *testing.T, version string, s cliSchema) {
	t.Helper()
	found := func(doc string, keys []string, want schemaExpect) {
		t.Helper()
		if len(keys) < want.min {
			t.Errorf("CLI %s: the extractor found %d keys of the %s (%q), want at least %d: it no longer finds the schema", version, len(keys), doc, keys, want.min)
		}
		for _, k := range want.keys {
			if !slices.Contains(keys, k) {
				t.Errorf("CLI %s: the extractor found no %q in the %s (%q)", version, k, doc, keys)
			}
		}
	}
	found("settings", s.settings, settingsExpect)
	found("settings.permissions", s.permissions, permissionsExpect)
	found("agent definition", s.agent, agentExpect)
	for typ, want := range transportExpect {
		found(typ+" MCP server entry", s.transports[typ], want)
	}
	for _, u := range s.unresolved {
		t.Errorf("CLI %s: the extractor could not follow the spread %s: teach it (cli_schema_extract_test.go)", version, u)
	}

	classified := func(doc, table string, keys []string, classes map[string]Class) {
		t.Helper()
		for _, k := range keys {
			if _, ok := classes[k]; !ok {
				t.Errorf("CLI %s: %s %q has no policy class: add it to %s (sessions/policy/fields.go)", version, doc, k, table)
			}
		}
	}
	classified("settings key", "settingsKeys", s.settings, settingsKeys)
	classified("settings.permissions key", "permissionsKeys", s.permissions, permissionsKeys)
	classified("agent field", "agentFields", s.agent, agentFields)
	for typ := range transportExpect {
		table, ok := mcpTransports[typ]
		if !ok {
			t.Errorf("CLI %s: MCP transport %q has no table in mcpTransports (sessions/policy/fields.go)", version, typ)
			continue
		}
		classified(typ+" MCP server field", "the "+typ+" table of mcpTransports", s.transports[typ], table)
	}
	for typ := range s.transports {
		if _, ok := mcpTransports[typ]; !ok {
			t.Logf("CLI %s: MCP transport %q is refused as unclassified", version, typ)
		}
	}
}

// packageVersion is the version of the npm package in dir.
func packageVersion(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil || pkg.Version == "" {
		t.Fatalf("reading the version in %s/package.json: %v", dir, err)
	}
	return pkg.Version
}

// minifiedSchemas imitates the CLI's bundle: zod schemas as object
// literals with minified names, strings, a regular expression and a
// template holding brackets, spreads of all kinds, the feature registry,
// and look-alikes that are no schema of the documents (a hook's http type,
// an entry built at run time).
const minifiedSchemas = `var a=1;function Ho(){return{orgMaxPermission:n().optional()}}` +
	`var S=p(()=>c({$schema:n().describe("a } ) ] brace"),apiKeyHelper:n().describe('it\'s a (helper'),` +
	"env:x.regex(/[)}\\]]/),tpl:n().describe(`x ${f({a:\"}\"},`)}`)} y`),...s.FLAG&&{xaaIdp:()=>c({issuer:n()})},...!1,...Nr(e)}));" +
	`var reg={a:{buildGate:()=>!0,shape:()=>({voiceEnabled:P()}),permissionsShape:()=>({disableAutoMode:F(["disable"])})}};` +
	`function Nr(e){let o={};for(let r of e)o={...o,...reg[r].shape()};return o}` +
	`function Px(e){let o={};for(let r of e)o={...o,...reg[r].permissionsShape?.()};return o}` +
	`var perm=c({allow:A(n()),deny:A(n()),additionalDirectories:A(n()),...Px(e)});` +
	`var ag=c({description:n(),prompt:n(),mcpServers:A(q()).optional()});` +
	`var sse=c({type:E("sse"),url:nt(),headersHelper:n().optional(),alwaysLoad:P().optional(),...Ho()});` +
	`var st=c({type:E("stdio").optional(),command:n(),alwaysLoad:P().optional()});` +
	`var h=c({type:F(["http","streamable-http"]).transform(()=>"http"),url:nt(),alwaysLoad:P()});` +
	`var hook=c({type:E("http").describe("HTTP hook type"),url:n(),statusMessage:n()});` +
	`var run={type:"ws",url:u,alwaysLoad:!0,scope:"dynamic"};` +
	`var odd=c({$schema:n(),apiKeyHelper:n(),...mystery(e)});`

// TestExtractSchemaMinified: the extractor finds the documents by their
// keys alone, follows their spreads, and reports the spread it cannot
// follow (no CLI needed).
func TestExtractSchemaMinified(t *testing.T) {
	s := extractSchema([]byte(minifiedSchemas))
	for _, tc := range []struct {
		doc       string
		got, want []string
	}{
		{"settings", s.settings, []string{"$schema", "apiKeyHelper", "env", "tpl", "voiceEnabled", "xaaIdp"}},
		{"permissions", s.permissions, []string{"additionalDirectories", "allow", "deny", "disableAutoMode"}},
		{"agent", s.agent, []string{"description", "mcpServers", "prompt"}},
		{"sse", s.transports["sse"], []string{"alwaysLoad", "headersHelper", "orgMaxPermission", "type", "url"}},
		{"stdio", s.transports["stdio"], []string{"alwaysLoad", "command", "type"}},
		{"http", s.transports["http"], []string{"alwaysLoad", "type", "url"}},
		{"streamable-http", s.transports["streamable-http"], []string{"alwaysLoad", "type", "url"}},
		{"ws (built at run time)", s.transports["ws"], nil},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s = %q, want %q", tc.doc, tc.got, tc.want)
		}
	}
	if want := []string{"settings: ...mystery(e)"}; !slices.Equal(s.unresolved, want) {
		t.Errorf("unresolved = %q, want %q", s.unresolved, want)
	}
}
