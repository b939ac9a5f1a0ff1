package claudeagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// Benchmarks of the stream pump: a claude stdout stream read through a
// started [Process] (its stdout pipe, the NDJSON framing, DecodeMessage, the
// message queue, [Process.Next]). The "CLI" is `cat`: the benchmark writes
// whole turns made of lines from testdata/streams (captures of the real
// CLI) to its stdin, and cat copies them to the stdout the Process reads,
// so what is measured is the pump and not a fake CLI's replay logic.
// Run with `go test -run XXX -bench StreamPump -benchmem ./claudeagent/`
// (scripts/bench does).
//
// Reported per op (one turn): ns/op, MB/s (stream bytes), B/op and
// allocs/op of the whole process; and per message: allocs/msg, B/msg,
// msgs/s.

// pumpCaptureLines returns the "out" messages of a capture, in order.
func pumpCaptureLines(b testing.TB, name string) []json.RawMessage {
	b.Helper()
	dir, err := fakecli.StreamsDir()
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, name+".jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		if e.Dir == "out" {
			out = append(out, e.Msg)
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// pumpLineOf returns the first line of capture msgs whose type (and, for a
// content-carrying line, first content block type) match.
func pumpLineOf(b testing.TB, msgs []json.RawMessage, typ, block string) []byte {
	b.Helper()
	for _, m := range msgs {
		var v struct {
			Type    string `json:"type"`
			Subtype string `json:"subtype"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(m, &v) != nil || v.Type != typ {
			continue
		}
		if block == "" || bytes.Contains(v.Message.Content, []byte(`"type":"`+block+`"`)) {
			return bytes.Clone(m)
		}
	}
	b.Fatalf("no %s/%s line in the capture", typ, block)
	return nil
}

// pumpTurns builds the turns the benchmarks feed: each is whole lines,
// '\n'-terminated, ending with exactly one result line.
type pumpTurn struct {
	data []byte
	msgs int
}

func pumpTurns(b testing.TB) map[string]pumpTurn {
	b.Helper()
	plain := pumpCaptureLines(b, "plain")
	tool := pumpCaptureLines(b, "tool_use")
	big := pumpCaptureLines(b, "big_line")
	initLine := pumpLineOf(b, plain, "system", "")
	textLine := pumpLineOf(b, plain, "assistant", "text")
	resultLine := pumpLineOf(b, plain, "result", "")
	toolUse := pumpLineOf(b, tool, "assistant", "tool_use")
	toolResult := pumpLineOf(b, tool, "user", "tool_result")
	bigText := pumpLineOf(b, big, "assistant", "text")
	bigResult := pumpLineOf(b, big, "result", "")
	if len(bigText) < 2_000_000 || len(bigResult) < 2_000_000 {
		b.Fatalf("big_line capture: lines of %d and %d bytes, want 2 MB each", len(bigText), len(bigResult))
	}
	// Assistant text lines of a few hundred bytes: the plain capture's
	// line with its text replaced by 100–500 bytes of prose.
	const recorded = `"Hello from fake API (n_messages=1)"`
	if !bytes.Contains(textLine, []byte(recorded)) {
		b.Fatalf("plain capture: no %s in %s", recorded, textLine)
	}
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog; \"quoted\" and \\escaped\\ text, ünïcödé. ", 8)
	textOf := func(n int) []byte {
		q, _ := json.Marshal(prose[:n])
		return bytes.Replace(textLine, []byte(recorded), q, 1)
	}
	// The BIGTEXT lines with their text (2,000,000 bytes of "abcdefghij")
	// replaced by as much prose: a newline and a quote every line, escapes
	// that a plain ASCII text does not have.
	bigASCII, _ := json.Marshal(strings.Repeat("abcdefghij", 200_000))
	line := "A line of an answer, with \"quotes\", a tab\tand ünïcödé.\n"
	bigProse, _ := json.Marshal(strings.Repeat(line, 2_000_000/len(line)+1)[:2_000_000])
	proseOf := func(l []byte) []byte {
		if !bytes.Contains(l, bigASCII) {
			b.Fatal("big_line capture: no 2,000,000 bytes of abcdefghij")
		}
		return bytes.Replace(l, bigASCII, bigProse, 1)
	}
	var small, mix [][]byte
	small = append(small, initLine)
	for i := range 20 {
		small = append(small, textOf(100+i*20))
		if i%4 == 3 {
			small = append(small, toolUse, toolResult)
		}
	}
	mix = append(mix, small...)
	mix = append(mix, bigText)
	small = append(small, resultLine)
	mix = append(mix, resultLine)
	join := func(lines ...[]byte) pumpTurn {
		var buf bytes.Buffer
		for _, l := range lines {
			buf.Write(l)
			buf.WriteByte('\n')
		}
		return pumpTurn{data: buf.Bytes(), msgs: len(lines)}
	}
	return map[string]pumpTurn{
		// 20 assistant text lines of 100–480 bytes of text, 5 tool_use and
		// tool_result pairs, the init and result lines: 32 messages.
		"small": join(small...),
		// The BIGTEXT capture: init, a 2 MB assistant line, a 2 MB result.
		"big": join(initLine, bigText, bigResult),
		// The same with 2 MB of prose.
		"bigprose": join(initLine, proseOf(bigText), proseOf(bigResult)),
		// small with a 2 MB assistant line before its result.
		"mix": join(mix...),
	}
}

// BenchmarkStreamPump reads turns through a started Process whose stdout is
// cat copying what the benchmark writes to its stdin.
func BenchmarkStreamPump(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("needs sh and cat")
	}
	turns := pumpTurns(b)
	script := filepath.Join(b.TempDir(), "claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec cat\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"small", "big", "bigprose", "mix"} {
		turn := turns[name]
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			p, err := Start(ctx, Options{Path: script, Cwd: b.TempDir(), CloseTimeout: 3 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := p.Close(); err != nil {
					b.Errorf("Close: %v", err)
				}
			}()
			// One writer goroutine, told when to write a turn, so that the
			// loop itself starts no goroutine.
			write := make(chan struct{})
			written := make(chan error, 1)
			go func() {
				for range write {
					_, err := p.stdin.Write(turn.data)
					written <- err
				}
			}()
			defer close(write)
			readTurn := func() {
				write <- struct{}{}
				for n := 0; ; n++ {
					m, err := p.Next(ctx)
					if err != nil {
						b.Fatalf("Next after %d messages: %v (stderr: %s)", n, err, p.StderrTail())
					}
					if _, ok := m.(*ResultMessage); ok {
						if n+1 != turn.msgs {
							b.Fatalf("%d messages in a turn, want %d", n+1, turn.msgs)
						}
						break
					}
				}
				if err := <-written; err != nil {
					b.Fatalf("writing to cat: %v", err)
				}
			}
			readTurn() // warm up the pipes and buffers
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.SetBytes(int64(len(turn.data)))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			n := 0
			for b.Loop() {
				readTurn()
				n++
			}
			elapsed := time.Since(start)
			b.StopTimer()
			runtime.ReadMemStats(&after)
			msgs := float64(n * turn.msgs)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/msgs, "allocs/msg")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/msgs, "B/msg")
			b.ReportMetric(msgs/elapsed.Seconds(), "msgs/s")
		})
	}
}

// TestStreamPumpTurns checks the benchmark's input, so that a change to the
// captures shows up in the ordinary test run and not only when someone
// benchmarks.
func TestStreamPumpTurns(t *testing.T) {
	t.Parallel()
	for name, turn := range pumpTurns(t) {
		var n, results int
		for line := range bytes.Lines(turn.data) {
			m, err := DecodeMessage(line)
			if err != nil {
				t.Fatalf("%s line %d: %v", name, n, err)
			}
			if _, ok := m.(*ResultMessage); ok {
				results++
			}
			n++
		}
		if n != turn.msgs || results != 1 {
			t.Errorf("%s: %d lines with %d results, want %d lines with one result", name, n, results, turn.msgs)
		}
	}
}
