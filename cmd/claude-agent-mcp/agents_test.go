package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestAgentSources: every agent source on stdio, the operator's alone over
// --http, unless --agent-sources says otherwise; the project is the
// server's directory; bad values stop the server with one line naming the
// flag.
func TestAgentSources(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		want    string // Sources.String()
		project string
		served  bool // anything to read
	}{
		{nil, "user,project,dirs,file", wd, true},
		{[]string{"--http", "127.0.0.1:0"}, "dirs,file", "", false},
		{[]string{"--http", "127.0.0.1:0", "--agents-file", "/f.yaml"}, "dirs,file", "", true},
		{[]string{"--http", "127.0.0.1:0", "--agent-sources", "project,file"}, "project,file", wd, true},
		{[]string{"--agent-sources", "none"}, "", "", false},
		{[]string{"--agents-dir", "/a" + string(os.PathListSeparator) + "/b", "--agents-file", "/f.yaml", "--max-agent-tools", "3"}, "user,project,dirs,file", wd, true},
	} {
		st := mustSettings(t, tc.args...)
		if got := st.agents.Sources.String(); got != tc.want || st.agents.Project != tc.project {
			t.Errorf("%v: sources %q, project %q; want %q, %q", tc.args, got, st.agents.Project, tc.want, tc.project)
		}
		if served := newAgents(st.agents, nil) != nil; served != tc.served {
			t.Errorf("%v: agents served = %v", tc.args, served)
		}
	}
	c, _, _ := parseFlags([]string{"--agents-dir", "/a" + string(os.PathListSeparator) + "/b", "--agents-file", "/f.yaml", "--max-agent-tools", "3"})
	if st, _ := c.check(); st.agents.File != "/f.yaml" || st.agents.Max != 3 || len(st.agents.Dirs) != 2 {
		t.Errorf("agents config = %+v", st.agents)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--agent-sources", "team"}, "--agent-sources"},
		{[]string{"--max-agent-tools", "0"}, "--max-agent-tools 0"},
		{[]string{"--agent-sources", "user", "--agents-file", "/f.yaml"}, "leaves out file"},
		{[]string{"--http", "127.0.0.1:0", "--agent-sources", "file", "--agents-dir", "/d"}, "leaves out dirs"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
