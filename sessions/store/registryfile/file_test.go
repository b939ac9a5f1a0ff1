package registryfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// TestParseTombstones: a version 2 file's tombstones (the close time
// alone) are read, and the sessions they close are left out.
func TestParseTombstones(t *testing.T) {
	t.Parallel()
	closed := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	v2 := fmt.Sprintf(`{"version":2,"sessions":[{"sessionId":"s1","claudeSessionId":"c1"},{"sessionId":"gone","claudeSessionId":"c0"}],"closed":{"gone":%q}}`, closed.Format(time.RFC3339))
	st, err := Parse([]byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range st.Sessions {
		ids = append(ids, e.SessionID)
	}
	if !slices.Equal(ids, []string{"s1"}) || !st.Closed["gone"].Closed.Equal(closed) {
		t.Errorf("Parse: sessions %v, tombstones %+v", ids, st.Closed)
	}
}

// TestTombstoneCodec: the tombstones' own encoder and scanner agree with
// encoding/json: what the encoder writes reads back the same, by the scan
// when nothing needs escaping and by encoding/json otherwise.
func TestTombstoneCodec(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 15, 7, 1, 123456789, time.UTC)
	for name, tc := range map[string]struct {
		m       Tombstones
		scanned bool
	}{
		"plain": {Tombstones{
			"s1": {Closed: at, Owner: "alice", ClaudeSessionIDs: []string{"c1", "c2"}},
			"s2": {Closed: at.Add(time.Second)},
			"s3": {Owner: "bob"},
		}, true},
		"empty":   {Tombstones{}, true},
		"escaped": {Tombstones{"s1": {Closed: at, Owner: "a\"b\\c é\n", ClaudeSessionIDs: []string{"<c1>"}}}, false},
	} {
		data, err := json.Marshal(tc.m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !json.Valid(data) {
			t.Fatalf("%s: invalid JSON %s", name, data)
		}
		var plain map[string]Tombstone
		if err := json.Unmarshal(data, &plain); err != nil {
			t.Fatalf("%s: encoding/json reads %s: %v", name, data, err)
		}
		var got Tombstones
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := scanTombstones(data); ok != tc.scanned {
			t.Errorf("%s: scanned %v, want %v: %s", name, ok, tc.scanned, data)
		}
		for _, m := range []map[string]Tombstone{plain, got} {
			if len(m) != len(tc.m) {
				t.Errorf("%s: read %v, want %v", name, m, tc.m)
			}
			for id, want := range tc.m {
				have := m[id]
				if !have.Closed.Equal(want.Closed) || have.Owner != want.Owner || !slices.Equal(have.ClaudeSessionIDs, want.ClaudeSessionIDs) {
					t.Errorf("%s: %s read %+v, want %+v", name, id, have, want)
				}
			}
		}
	}
}

// TestRegistryVersion1 reads a file written before the options had JSON
// names: Go field names, and the MCP servers as an --mcp-config document.
func TestRegistryVersion1(t *testing.T) {
	t.Parallel()
	v1 := `{"version":1,"sessions":[{"sessionId":"s1","claudeSessionId":"c1","resumable":true,"options":{"Cwd":"/x","Model":"sonnet","PermissionMode":"plan","AllowedTools":["Bash"],"MaxTurns":2,"AddDirs":["/y"],"MCPConfig":"{\"mcpServers\":{\"fs\":{\"command\":\"srv\"}}}","StrictMCPConfig":true,"ResumeSessionID":"r","ForkSession":true,"Env":null,"Profile":"work","Temporary":false}}]}`
	st, err := Parse([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	got := st.Sessions
	want := options.CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash"}, MaxTurns: 2, AddDirs: []string{"/y"}},
		Cwd: "/x", MCPServers: map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"srv"}`)}, StrictMCPConfig: true, ResumeSessionID: "r", ForkSession: true, Profile: "work"}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Options, want) {
		t.Errorf("Load = %+v\nwant options %+v", got, want)
	}
}
