package jsonenc

import (
	"encoding/json"
	"testing"
)

// TestMarshal: json.Marshal's bytes, but for <, > and &, and no newline.
func TestMarshal(t *testing.T) {
	got, err := Marshal(map[string]any{"p": "<example> a & b", "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":1,"p":"<example> a & b"}`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("Marshal of a func: no error")
	}
	std, _ := json.Marshal([]string{"plain"})
	if got, _ := Marshal([]string{"plain"}); string(got) != string(std) {
		t.Errorf("Marshal = %s, json.Marshal = %s", got, std)
	}
}
