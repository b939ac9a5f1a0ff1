package sessions

import (
	"encoding/json"
	"maps"
	"testing"
)

// TestSettingsEnv: the env a turn's trace context is sent with keeps a
// settings object's own env; settings in a file (or given as a path) are
// not read, and then the trace context is not sent (it would replace
// their env).
func TestSettingsEnv(t *testing.T) {
	for _, c := range []struct {
		settings string
		file     string
		env      map[string]string
		ok       bool
	}{
		{"", "", nil, true},
		{`{"model":"x"}`, "", nil, true},
		{`{"env":{"A":"1","B":"2"}}`, "", map[string]string{"A": "1", "B": "2"}, true},
		{`"/etc/settings.json"`, "", nil, false},
		{`{"env":{"A":1}}`, "", nil, false},
		{"", "/etc/settings.json", nil, false},
	} {
		env, ok := settingsEnv(json.RawMessage(c.settings), c.file)
		if ok != c.ok || !maps.Equal(env, c.env) {
			t.Errorf("settingsEnv(%s, %q) = %v, %v; want %v, %v", c.settings, c.file, env, ok, c.env, c.ok)
		}
	}
}
