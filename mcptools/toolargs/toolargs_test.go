package toolargs

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestCheckNulls: a null where a value is optional gets the advice to leave
// it out (a parameter or field not required, a map's value); where one is
// required (a required parameter or field, a list's item) it gets none;
// Legacy is asked first and its refusal replaces the schema's.
func TestCheckNulls(t *testing.T) {
	str := &jsonschema.Schema{Type: "string"}
	schema := &jsonschema.Schema{Type: "object", Required: []string{"id"}, Properties: map[string]*jsonschema.Schema{
		"id":   str,
		"name": str,
		"old":  str,
		"list": {Type: "array", Items: str},
		"map":  {Type: "object", AdditionalProperties: str},
		"obj":  {Type: "object", Required: []string{"path"}, Properties: map[string]*jsonschema.Schema{"path": str, "note": str}},
	}}
	legacy := func(name string, raw json.RawMessage) error {
		if name == "old" {
			return errors.New("old: the old form")
		}
		return nil
	}
	for _, c := range []struct{ args, want string }{
		{`{"id": null}`, `id: expected a string, got null`},
		{`{"id": "x", "name": null}`, `name: expected a string, got null (leave it out for the default)`},
		{`{"id": "x", "list": [null]}`, `list[0]: expected a string, got null`},
		{`{"id": "x", "map": {"k": null}}`, `map["k"]: expected a string, got null (leave it out for the default)`},
		{`{"id": "x", "obj": {"path": null, "note": null}}`, `obj.note: expected a string, got null (leave it out for the default); obj.path: expected a string, got null`},
		{`{"id": "x", "old": 1}`, `old: the old form`},
	} {
		err := Check(schema, "tool", json.RawMessage(c.args), legacy)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.args, err, c.want)
		}
	}
	if err := Check(schema, "tool", json.RawMessage(`{"id": "x", "obj": {"path": "p"}}`), nil); err != nil {
		t.Errorf("valid arguments: %v", err)
	}
}
