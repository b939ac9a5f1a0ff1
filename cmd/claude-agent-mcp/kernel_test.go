package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
)

// TestNoLandlock: where the kernel cannot enforce the ceilings (no
// Landlock) or jail the processes (no namespaces), --http is refused to
// anyone but this machine's own user — beyond loopback, behind a
// --public-url on another host (a TLS proxy's), or to the several users of
// a tokens file — unless --accept-no-landlock accepts it; stdio and a bare
// loopback serve (the start logs the warning).
func TestNoLandlock(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice:"+strings.Repeat("a", 64)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	none := func() (int, error) { return 0, fmt.Errorf("%w: no Landlock here", ceiling.ErrUnavailable) }
	noJail := func() error { return fmt.Errorf("%w: no namespaces here", ceiling.ErrUnavailable) }
	defer func() { kernelAvailable, jailAvailable = ceiling.Available, ceiling.JailAvailable }()
	for _, missing := range []string{"landlock", "jail"} {
		kernelAvailable, jailAvailable = ceiling.Available, ceiling.JailAvailable
		if missing == "landlock" {
			kernelAvailable = none
		} else {
			jailAvailable = noJail
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{nil, ""},
			{[]string{"--http", "127.0.0.1:0"}, ""},
			{[]string{"--http", "0.0.0.0:0", "--tokens-file", tokens}, "--accept-no-landlock"},
			{[]string{"--http", "127.0.0.1:0", "--public-url", "https://agents.example.com"}, "--accept-no-landlock"},
			{[]string{"--http", "127.0.0.1:0", "--public-url", "http://127.0.0.1:8787"}, ""},
			{[]string{"--http", "127.0.0.1:0", "--tokens-file", tokens}, "--accept-no-landlock"},
			{[]string{"--http", "0.0.0.0:0", "--tokens-file", tokens, "--accept-no-landlock"}, ""},
			{[]string{"--http", "127.0.0.1:0", "--public-url", "https://agents.example.com", "--accept-no-landlock"}, ""},
		} {
			c, _, err := parseFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			st, err := c.check()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("without the %s, %v: %v, want %q", missing, tc.args, err, tc.want)
				continue
			}
			if err == nil && missing == "landlock" && (st.sessions.Kernel || st.noKernel == nil) {
				t.Errorf("%v: the sessions' kernel ceilings are on without Landlock", tc.args)
			}
			if err == nil && missing == "jail" && (st.sessions.Jail || st.noJail == nil) {
				t.Errorf("%v: the sessions are jailed without namespaces", tc.args)
			}
		}
	}
}

// TestSettingSourcesFlag: --setting-sources defaults to the CLI's own
// default on stdio and to none over --http.
func TestSettingSourcesFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"--http", "127.0.0.1:0"}, []string{}},
		{[]string{"--setting-sources", "user"}, []string{"user"}},
		{[]string{"--setting-sources", "none"}, []string{}},
		{[]string{"--setting-sources", "local,user,project"}, nil},
		{[]string{"--http", "127.0.0.1:0", "--setting-sources", "project"}, []string{"project"}},
	} {
		st := mustSettings(t, tc.args...)
		if got := st.sessions.SettingSources; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: sources %#v, want %#v", tc.args, got, tc.want)
		}
	}
	c, _, _ := parseFlags([]string{"--setting-sources", "user,global"})
	if _, err := c.check(); err == nil || !strings.Contains(err.Error(), "invalid --setting-sources global") {
		t.Errorf("a bad source: %v", err)
	}
}
