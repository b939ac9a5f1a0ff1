package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPartialEvent: a "partial" event written by hand is the event
// json.Marshal made of {"reset","text"}, as the page's script reads it.
func TestPartialEvent(t *testing.T) {
	for _, text := range []string{"", "chunk0 ", "line\nnext \"q\" \\ <b> & é \u2028 😀\r\n\t", strings.Repeat("x\n", 40000)} {
		for _, reset := range []bool{false, true} {
			var e sseWriter
			e.partial(text, reset)
			out := e.buf.String()
			data, ok := strings.CutPrefix(out, "event: partial\ndata: ")
			if !ok || !strings.HasSuffix(data, "\n\n") || strings.Count(data, "\n") != 2 {
				t.Fatalf("partial(%.30q, %v) = %.80q: not one event of one data line", text, reset, out)
			}
			var got struct {
				Text  *string `json:"text"`
				Reset *bool   `json:"reset"`
			}
			if err := json.Unmarshal([]byte(data), &got); err != nil || got.Text == nil || got.Reset == nil {
				t.Fatalf("partial(%.30q, %v): data %.80q: %v", text, reset, data, err)
			}
			if *got.Text != text || *got.Reset != reset {
				t.Errorf("partial(%.30q, %v) reads back as %.30q, %v", text, reset, *got.Text, *got.Reset)
			}
		}
	}
}
