package fakecli

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestCaptures checks that every recorded scenario has what the fake needs.
func TestCaptures(t *testing.T) {
	dir, err := StreamsDir()
	if err != nil {
		t.Fatal(err)
	}
	caps := &captures{dir: dir}
	for _, name := range []string{"plain", "two_turns", "tool_use", "thinking", "interrupt", "api_error",
		"max_turns", "set_model", "can_use_tool", "big_line", "not_logged_in", "usage_limit", "usage_warning",
		"partial", "steer_tool", "steer_answer", "ask_user_question"} {
		c, err := caps.get(name)
		if err != nil {
			t.Fatal(err)
		}
		if c.sessionID == "" {
			t.Errorf("%s: no session id", name)
		}
		if first := c.entries[0]; first.Dir != "in" || first.subtype != "initialize" {
			t.Errorf("%s: does not start with initialize", name)
		}
		want := 1
		if name == "two_turns" {
			want = 2
		}
		if len(c.turns) != want {
			t.Fatalf("%s: %d turns, want %d", name, len(c.turns), want)
		}
		for _, turn := range c.turns {
			if last := turn[len(turn)-1]; last.typ != "result" {
				t.Errorf("%s: turn ends with %s", name, last.typ)
			}
			if turn[0].typ != "system" || turn[0].subtype != "init" {
				t.Errorf("%s: turn starts with %s/%s", name, turn[0].typ, turn[0].subtype)
			}
		}
		has := func(dir, typ, subtype string) bool {
			e, _ := c.find(0, dir, func(e *entry) bool { return e.typ == typ && e.subtype == subtype })
			return e != nil
		}
		switch name {
		case "interrupt":
			if !has("in", "control_request", "interrupt") {
				t.Error("interrupt: no interrupt request")
			}
		case "can_use_tool", "ask_user_question":
			if !has("out", "control_request", "can_use_tool") || !has("in", "control_response", "success") {
				t.Error("can_use_tool: no permission round trip")
			}
		case "set_model":
			if !has("in", "control_request", "set_model") {
				t.Error("set_model: no set_model request")
			}
		case "usage_limit", "usage_warning":
			if !has("out", "rate_limit_event", "") {
				t.Errorf("%s: no rate_limit_event", name)
			}
		}
	}
	c, _ := caps.get("two_turns")
	r1, r2 := c.turns[0][len(c.turns[0])-1], c.turns[1][len(c.turns[1])-1]
	if r1.cost <= 0 || r2.cost <= 0 {
		t.Errorf("per-turn costs %v, %v", r1.cost, r2.cost)
	}
}

func TestParseArgs(t *testing.T) {
	fs := parseArgs([]string{"--output-format", "stream-json", "--verbose", "--resume=-x", "--max-turns", "2", "--fork-session"})
	want := flagSet{"--output-format": "stream-json", "--verbose": "", "--resume": "-x", "--max-turns": "2", "--fork-session": ""}
	if !reflect.DeepEqual(fs, want) {
		t.Errorf("parseArgs = %v", fs)
	}
}

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		f    *fake
		text string
		want string
		slow int
	}{
		{&fake{}, "hi", "plain", 0},
		{&fake{}, "TOOL_BASH[echo hi]", "tool_use", 0},
		{&fake{stdio: true}, "TOOL_BASH[x]", "can_use_tool", 0},
		{&fake{stdio: true, mode: "bypassPermissions"}, "TOOL_BASH[x]", "tool_use", 0},
		{&fake{stdio: true, maxT: true}, "TOOL_BASH[x]", "max_turns", 0},
		{&fake{}, "THINK", "thinking", 0},
		{&fake{}, "SLOW", "interrupt", 20},
		{&fake{}, "SLOW5 please", "interrupt", 5},
		{&fake{}, "ERR400 ALWAYS", "api_error", 0},
		{&fake{}, "BIGTEXT", "big_line", 0},
		{&fake{}, "LIMIT[600] hi", "usage_limit", 0},
		{&fake{}, "LIMITWARN hi", "usage_warning", 0},
		{&fake{loggedOut: true}, "TOOL_BASH[x]", "not_logged_in", 0},
		{&fake{}, "TOOL_BASH[sleep 1; echo hi]", "steer_tool", 0},
		{&fake{stdio: true}, "TOOL_BASH[sleep 1]", "can_use_tool", 0},
	} {
		if got, slow := tc.f.pick(tc.text); got != tc.want || slow != tc.slow {
			t.Errorf("pick(%q) = %s, %d; want %s, %d", tc.text, got, slow, tc.want, tc.slow)
		}
	}
}

// TestResetsIn: with FAKE_CLAUDE_RESETS_IN a replayed resetsAt is moved
// to that long from now, a whole second.
func TestResetsIn(t *testing.T) {
	f := &fake{resetsIn: time.Hour, paths: strings.NewReplacer()}
	before := time.Now()
	line := string(f.rewrite(&capture{}, []byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795621502}}`)))
	var m struct {
		Info struct{ ResetsAt int64 } `json:"rate_limit_info"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	if at := time.Unix(m.Info.ResetsAt, 0); at.Before(before.Add(time.Hour)) || at.After(time.Now().Add(time.Hour+time.Second)) {
		t.Errorf("resetsAt %s, want an hour from %s: %s", at, before, line)
	}
}

func TestObjectKeepsOrder(t *testing.T) {
	in := `{"type":"result","b":[1,2],"total_cost_usd":0.1,"a":{"x":"<y>"}}`
	o, err := parseObject([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	o.set("total_cost_usd", 0.25)
	o.set("new", "v")
	if got, want := string(o.bytes()), `{"type":"result","b":[1,2],"total_cost_usd":0.25,"a":{"x":"<y>"},"new":"v"}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	line := editBlocks([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"a"},{"type":"tool_use"}]}}`),
		func(b *object) {
			if string(b.get("type")) == `"text"` {
				b.set("text", "b")
			}
		})
	if !json.Valid(line) || string(line) != `{"type":"assistant","message":{"content":[{"type":"text","text":"b"},{"type":"tool_use"}]}}` {
		t.Errorf("editBlocks = %s", line)
	}
}

// TestAuthStatus: `auth status` answers as the real CLI does, logged in
// unless FAKE_CLAUDE_NOT_LOGGED_IN=1.
func TestAuthStatus(t *testing.T) {
	for _, tc := range []struct {
		env      string
		loggedIn bool
		code     int
	}{{"", true, 0}, {"1", false, 1}} {
		t.Setenv(EnvNotLoggedIn, tc.env)
		var out bytes.Buffer
		code := run([]string{"auth", "status", "--json"}, strings.NewReader(""), &out, io.Discard)
		var st struct {
			LoggedIn *bool `json:"loggedIn"`
		}
		if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.LoggedIn == nil {
			t.Fatalf("%s=%q: output %q: %v", EnvNotLoggedIn, tc.env, out.String(), err)
		}
		if *st.LoggedIn != tc.loggedIn || code != tc.code {
			t.Errorf("%s=%q: loggedIn %v, exit %d; want %v, %d", EnvNotLoggedIn, tc.env, *st.LoggedIn, code, tc.loggedIn, tc.code)
		}
	}
}
