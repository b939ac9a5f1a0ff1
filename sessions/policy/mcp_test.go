package policy

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// fakeResolver resolves the names of its map; any other name fails as
// unknown.
type fakeResolver map[string][]string

func (r fakeResolver) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	addrs, ok := r[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// names is the resolver of the tests: public names, internal names, and
// one of each kind.
var names = fakeResolver{
	"mcp.example.com":      {"93.184.215.14"},
	"v6.example.com":       {"2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	"intranet.example.com": {"10.1.2.3"},
	"mixed.example.com":    {"93.184.215.14", "192.168.1.5"},
	"metadata.example.com": {"169.254.169.254"},
	"cgnat.example.com":    {"100.64.0.1"},
	"ula.example.com":      {"fd12::1"},
	"empty.example.com":    {},
}

// mcpOpts are session options with the MCP server entry given as JSON.
func mcpOpts(t *testing.T, entry string) options.CreateOptions {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return options.CreateOptions{Cwd: wd, MCPServers: map[string]json.RawMessage{"x": json.RawMessage(entry)}}
}

// agentMCPOpts are session options with an agent whose mcpServers hold
// the entry.
func agentMCPOpts(t *testing.T, entry string) options.CreateOptions {
	t.Helper()
	o := mcpOpts(t, "{}")
	o.MCPServers = nil
	o.Agents = json.RawMessage(`{"a":{"description":"d","prompt":"p","mcpServers":[{"x":` + entry + `}]}}`)
	return o
}

// TestMCPServerFields: each field of an MCP server entry is classified by
// its transport's table (defect 1: an http or sse entry's headersHelper,
// a shell command the CLI runs at session start, passed as harmless), in
// the session's mcpServers and an agent's alike.
func TestMCPServerFields(t *testing.T) {
	strict := Config{ToolsCeiling: []string{"Read", "Grep", "Glob"}, LookupHost: names.lookup}
	noServers := Config{NoSessionMCPServers: true, LookupHost: names.lookup}
	remote := Config{Remote: true, LookupHost: names.lookup}
	remoteAll := Config{Remote: true, RemoteAllow: []string{"runs-programs", "widens-permissions", "reads-files", "internal-urls"}, LookupHost: names.lookup}
	const helper = `{"type":"http","url":"https://mcp.example.com/mcp","headersHelper":"id > /tmp/F"}`
	for _, tc := range []struct {
		name  string
		cfg   Config
		entry string
		want  string // "" allows
	}{
		{"http headersHelper under a ceiling", strict, helper, `mcpServers["x"].headersHelper runs a program, and this server lets sessions run no programs`},
		{"sse headersHelper under a ceiling", strict, `{"type":"sse","url":"https://mcp.example.com/sse","headersHelper":"id"}`, `mcpServers["x"].headersHelper runs a program`},
		{"streamable-http headersHelper under a ceiling", strict, `{"type":"streamable-http","url":"https://mcp.example.com/mcp","headersHelper":"id"}`, `mcpServers["x"].headersHelper runs a program`},
		{"ws headersHelper under a ceiling", strict, `{"type":"ws","url":"wss://mcp.example.com/ws","headersHelper":"id"}`, `mcpServers["x"].headersHelper runs a program`},
		{"headersHelper without session MCP servers", noServers, helper, `mcpServers["x"].headersHelper runs a command, and this server does not let sessions start MCP servers or their helpers`},
		{"headersHelper remote", remote, helper, `mcpServers["x"].headersHelper is off over HTTP: it runs programs on the server as its user; the operator enables it with --http-allow runs-programs (or mcp-servers)`},
		{"headersHelper with runs-programs", remoteAll, helper, ""},
		{"oauth under a ceiling", strict, `{"type":"http","url":"https://mcp.example.com/mcp","oauth":{"clientId":"c","callbackPort":8123}}`, `mcpServers["x"].oauth runs a program`},
		{"tools that always allow, remote", remote, `{"type":"http","url":"https://mcp.example.com/mcp","tools":[{"name":"t","permission_policy":"always_allow"}]}`, `mcpServers["x"].tools is off over HTTP: it lets the session act without asking`},
		{"toolPermissions remote", remote, `{"type":"sse","url":"https://mcp.example.com/sse","toolPermissions":{"t":"allow"}}`, `mcpServers["x"].toolPermissions is off over HTTP`},
		{"harmless http fields remote", remote, `{"type":"http","url":"https://mcp.example.com/mcp","headers":{"A":"b"},"timeout":5,"alwaysLoad":true,"displayName":"X"}`, ""},
		{"harmless http fields under a ceiling", strict, `{"type":"http","url":"https://mcp.example.com/mcp","headers":{"A":"b"}}`, ""},
		{"unknown http field under a ceiling", strict, `{"type":"http","url":"https://mcp.example.com/mcp","brandNewHelper":"id"}`, `mcpServers["x"].brandNewHelper is not known to this server's policy`},
		{"unknown http field remote", remoteAll, `{"type":"http","url":"https://mcp.example.com/mcp","brandNewHelper":"id"}`, `mcpServers["x"].brandNewHelper is not known to this server's policy, so it is refused over HTTP (--http-allow mcp-servers opens it)`},
		{"unknown http field locally without ceilings", Config{}, `{"type":"http","url":"https://mcp.example.com/mcp","brandNewHelper":"id"}`, ""},
		{"a field of stdio in an http entry", strict, `{"type":"http","url":"https://mcp.example.com/mcp","command":"id"}`, `mcpServers["x"].command is not known to this server's policy`},
		{"transport of the IDE", strict, `{"type":"ws-ide","url":"ws://127.0.0.1:1","ideName":"x"}`, `mcpServers["x"] (type "ws-ide") is not known to this server's policy`},
		{"sdk transport remote", remoteAll, `{"type":"sdk","name":"x"}`, `mcpServers["x"] (type "sdk") is not known to this server's policy`},
		{"type not a string", strict, `{"type":1,"command":"id"}`, `mcpServers["x"].type is not known to this server's policy`},
		{"stdio command under a ceiling", strict, `{"command":"id","args":["-u"],"env":{"A":"b"}}`, `mcpServers["x"] (a command) runs a program`},
		{"stdio command without session MCP servers", noServers, `{"type":"stdio","command":"id"}`, `mcpServers["x"] (a command) runs a command`},
		{"stdio command with runs-programs", remoteAll, `{"command":"id","timeout":5}`, ""},
		{"stdio entry with a helper", remoteAll, `{"command":"id","headersHelper":"id"}`, `mcpServers["x"].headersHelper is not known to this server's policy`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, where := range []string{"session", "agent"} {
				o := mcpOpts(t, tc.entry)
				want := tc.want
				if where == "agent" {
					o = agentMCPOpts(t, tc.entry)
					want = strings.ReplaceAll(want, `mcpServers["x"]`, `agents["a"].mcpServers["x"]`)
				}
				_, err := New(tc.cfg).Check(&o, Change{})
				switch {
				case want == "" && err != nil:
					t.Errorf("%s: Check = %v, want it allowed", where, err)
				case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: Check = %v, want an error containing %q", where, err, want)
				}
			}
		})
	}
}

// TestInternalURLs: an MCP server URL to the server's own machine or its
// internal network needs --http-allow internal-urls from a remote caller;
// a name that does not resolve counts as internal; local callers are not
// bound (and nothing is looked up for them).
func TestInternalURLs(t *testing.T) {
	for _, tc := range []struct {
		url      string
		internal bool
	}{
		{"https://mcp.example.com/mcp", false},
		{"https://v6.example.com/mcp", false},
		{"https://93.184.215.14/mcp", false},
		{"https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/mcp", false},
		{"https://MCP.Example.com./mcp", false},
		{"http://127.0.0.1:8080/mcp", true},
		{"http://127.9.9.9/", true},
		{"http://[::1]:8080/", true},
		{"http://[::ffff:127.0.0.1]/", true},
		{"http://[64:ff9b::a00:1]/", true}, // NAT64 of 10.0.0.1
		{"http://0.0.0.0:8080/", true},
		{"http://[::]/", true},
		{"http://10.0.0.1/", true},
		{"http://172.16.5.4/", true},
		{"http://192.168.0.1/", true},
		{"http://169.254.169.254/latest/meta-data/", true},
		{"http://[fe80::1%25eth0]/", true},
		{"http://[fd00::1]/", true},
		{"http://100.64.1.1/", true},
		{"http://localhost:3000/", true},
		{"http://LOCALHOST./", true},
		{"http://app.localhost/", true},
		{"http://2130706433/", true}, // 127.0.0.1 to a WHATWG URL parser
		{"http://0x7f.1/", true},
		{"http://127.1/", true},
		{"http://017700000001/", true},
		{"http://1.2.3.999/", true}, // not an address the CLI accepts; not public either
		{"https://intranet.example.com/", true},
		{"https://mixed.example.com/", true},
		{"https://metadata.example.com/", true},
		{"https://cgnat.example.com/", true},
		{"https://ula.example.com/", true},
		{"https://empty.example.com/", true},
		{"https://unknown.example.com/", true},
		{"http:///nohost", true},
		{"::not a url", true},
	} {
		g := New(Config{LookupHost: names.lookup})
		if got := g.internalURL(tc.url); got != tc.internal {
			t.Errorf("internalURL(%q) = %v, want %v", tc.url, got, tc.internal)
		}
	}

	entry := `{"type":"http","url":"http://169.254.169.254/latest/meta-data/","headers":{"Authorization":"Bearer x"}}`
	o := mcpOpts(t, entry)
	_, err := New(Config{Remote: true, LookupHost: names.lookup}).Check(&o, Change{})
	if want := `mcpServers["x"].url 169.254.169.254 is off over HTTP: it reaches the server's own machine or internal network; the operator enables it with --http-allow internal-urls`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("remote internal URL: Check = %v, want %q", err, want)
	}
	if _, err := New(Config{Remote: true, RemoteAllow: []string{"internal-urls"}, LookupHost: names.lookup}).Check(&o, Change{}); err != nil {
		t.Errorf("remote internal URL with --http-allow internal-urls: %v", err)
	}
	o = agentMCPOpts(t, `{"type":"sse","url":"https://intranet.example.com/sse"}`)
	if _, err := New(Config{Remote: true, LookupHost: names.lookup}).Check(&o, Change{}); err == nil || !strings.Contains(err.Error(), `agents["a"].mcpServers["x"].url intranet.example.com is off over HTTP`) {
		t.Errorf("remote agent's internal URL: Check = %v, want it refused", err)
	}
	o = mcpOpts(t, `{"type":"http","url":"https://mcp.example.com/mcp"}`)
	if _, err := New(Config{Remote: true, LookupHost: names.lookup}).Check(&o, Change{}); err != nil {
		t.Errorf("remote public URL: %v", err)
	}
	noLookup := func(context.Context, string) ([]netip.Addr, error) {
		t.Error("a local caller's URL was looked up")
		return nil, errors.New("no")
	}
	for _, u := range []string{"http://127.0.0.1:1/", "https://intranet.example.com/"} {
		o = mcpOpts(t, `{"type":"http","url":"`+u+`"}`)
		if _, err := New(Config{ToolsCeiling: []string{"Read"}, NoSessionMCPServers: true, LookupHost: noLookup}).Check(&o, Change{}); err != nil {
			t.Errorf("local caller, %s: %v", u, err)
		}
	}
}

// TestHTTPAllowNames: internal-urls is a --http-allow class of its own.
func TestHTTPAllowNames(t *testing.T) {
	names := HTTPAllowNames()
	for _, n := range []string{"reads-files", "runs-programs", "widens-permissions", "internal-urls"} {
		if !strings.Contains(strings.Join(names, ","), n) {
			t.Errorf("HTTPAllowNames() = %v, want %s among them", names, n)
		}
	}
	if got := InternalURLs.String(); got != "internal-urls" {
		t.Errorf("InternalURLs.String() = %q", got)
	}
}
