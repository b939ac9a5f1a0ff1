package main

import "testing"

// TestUserMaxLiveDefault: over --http one user gets at most half of the
// live processes by default, so that endless turns leave room for others;
// 0 still means no limit.
func TestUserMaxLiveDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--http", "127.0.0.1:0"}, 2},
		{[]string{"--http", "127.0.0.1:0", "--max-live", "5"}, 3},
		{[]string{"--http", "127.0.0.1:0", "--max-live", "1"}, 1},
		{[]string{"--http", "127.0.0.1:0", "--user-max-live", "0"}, 0},
		{[]string{"--http", "127.0.0.1:0", "--user-max-live", "4"}, 4},
	} {
		st := mustSettings(t, tc.args...)
		if got := st.sessions.UserMaxLive; got != tc.want {
			t.Errorf("%v: --user-max-live is %d, want %d", tc.args, got, tc.want)
		}
	}
	c, _, _ := parseFlags([]string{"--http", "127.0.0.1:0", "--user-max-live", "-2"})
	if _, err := c.check(); err == nil {
		t.Error("--user-max-live -2 was accepted")
	}
}

// mustSettings parses and checks args as the server does at start.
func mustSettings(t *testing.T, args ...string) *settings {
	t.Helper()
	c, _, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.check()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return st
}
