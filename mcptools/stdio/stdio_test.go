package stdio

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestEncodeResult: the frame encodeResult writes for a successful
// response is jsonrpc.EncodeMessage's, byte for byte; what it does not
// take (errors, requests, an empty result, one with a newline) falls back.
func TestEncodeResult(t *testing.T) {
	mustID := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, tc := range []struct {
		name   string
		msg    jsonrpc.Message
		framed bool
	}{
		{"int_id", &jsonrpc.Response{ID: mustID(float64(7)), Result: json.RawMessage(`{"a":1}`)}, true},
		{"big_int_id", &jsonrpc.Response{ID: mustID(float64(1 << 52)), Result: json.RawMessage(`[]`)}, true},
		{"string_id", &jsonrpc.Response{ID: mustID(`a<b>&"c"é`), Result: json.RawMessage(`{"text":"<x> & \u2028 é"}`)}, true},
		{"error", &jsonrpc.Response{ID: mustID(float64(1)), Error: &jsonrpc.Error{Code: 1, Message: "no"}}, false},
		{"empty_result", &jsonrpc.Response{ID: mustID(float64(1))}, false},
		{"newline_in_result", &jsonrpc.Response{ID: mustID(float64(1)), Result: json.RawMessage("{\n}")}, false},
		{"request", &jsonrpc.Request{ID: mustID(float64(1)), Method: "ping"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := encodeResult(tc.msg)
			if ok != tc.framed {
				t.Fatalf("framed = %v, want %v", ok, tc.framed)
			}
			if !ok {
				return
			}
			want, err := jsonrpc.EncodeMessage(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encodeResult:\n%s\nEncodeMessage:\n%s", got, want)
			}
		})
	}
}
