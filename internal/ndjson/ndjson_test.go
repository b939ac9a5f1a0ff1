package ndjson

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"testing/iotest"
)

// lineResult is what one readLine call returned.
type lineResult struct {
	line    string
	tooLong bool  // ErrTooLong
	err     error // io.EOF or another error besides ErrTooLong
}

// readLines calls readLine until it reports the end of input.
func readLines(t *testing.T, r io.Reader, bufSize, max int) []lineResult {
	t.Helper()
	br := bufio.NewReaderSize(r, bufSize)
	var out []lineResult
	for range 1000 {
		line, err := ReadLine(br, max)
		res := lineResult{line: string(line), tooLong: errors.Is(err, ErrTooLong)}
		switch {
		case errors.Is(err, io.EOF):
			res.err = io.EOF
		case err != nil && !res.tooLong:
			res.err = err
		}
		out = append(out, res)
		if res.err != nil {
			return out
		}
	}
	t.Fatal("readLine never reached the end")
	return nil
}

func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 100) // > the 16-byte bufio buffer used below
	for _, tc := range []struct {
		name  string
		input string
		max   int
		want  []lineResult
	}{
		{"simple", "a\nb\n", 100, []lineResult{{line: "a\n"}, {line: "b\n"}, {err: io.EOF}}},
		{"longer_than_buffer", long + "\nnext\n", 1000, []lineResult{{line: long + "\n"}, {line: "next\n"}, {err: io.EOF}}},
		{"no_trailing_newline", "a\nlast", 100, []lineResult{{line: "a\n"}, {line: "last", err: io.EOF}}},
		{"long_no_trailing_newline", long, 1000, []lineResult{{line: long, err: io.EOF}}},
		{"blank_lines", "\n\n{}\n", 100, []lineResult{{line: "\n"}, {line: "\n"}, {line: "{}\n"}, {err: io.EOF}}},
		{"crlf", "a\r\n", 100, []lineResult{{line: "a\r\n"}, {err: io.EOF}}},
		// A line over the cap is consumed whole; its head comes back.
		{"over_max_skipped", long + "\nnext\n", 50, []lineResult{{line: long + "\n", tooLong: true}, {line: "next\n"}, {err: io.EOF}}},
		{"over_max_twice", long + "\n" + long + "\nok\n", 50, []lineResult{{line: long + "\n", tooLong: true}, {line: long + "\n", tooLong: true}, {line: "ok\n"}, {err: io.EOF}}},
		{"over_max_at_eof", "ok\n" + long, 50, []lineResult{{line: "ok\n"}, {line: long, tooLong: true, err: io.EOF}}},
		// The cap counts the newline.
		{"exactly_max", "abcd\nx\n", 5, []lineResult{{line: "abcd\n"}, {line: "x\n"}, {err: io.EOF}}},
		{"one_over_max", "abcde\nx\n", 5, []lineResult{{line: "abcde\n", tooLong: true}, {line: "x\n"}, {err: io.EOF}}},
		{"empty", "", 5, []lineResult{{err: io.EOF}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one_byte_reads"} {
				var r io.Reader = strings.NewReader(tc.input)
				if mode == "one_byte_reads" {
					r = iotest.OneByteReader(r)
				}
				got := readLines(t, r, 16, tc.max)
				if !equalResults(got, tc.want) {
					t.Errorf("%s: got %+v\nwant %+v", mode, got, tc.want)
				}
			}
		})
	}
}

func equalResults(a, b []lineResult) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].line != b[i].line || a[i].tooLong != b[i].tooLong || a[i].err != b[i].err {
			return false
		}
	}
	return true
}

// TestReadLineReaderError: an I/O error other than EOF is returned with
// what was read.
func TestReadLineReaderError(t *testing.T) {
	boom := errors.New("boom")
	br := bufio.NewReaderSize(io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(boom)), 16)
	line, err := ReadLine(br, 100)
	if string(line) != "partial" || !errors.Is(err, boom) {
		t.Errorf("readLine = %q, %v", line, err)
	}
}

// TestReadLineBig reads a 3 MB line through the 64 KiB buffer the process
// uses, with the default cap.
func TestReadLineBig(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)
	input := append(append(append([]byte(nil), big...), '\n'), "{}\n"...)
	br := bufio.NewReaderSize(bytes.NewReader(input), 64<<10)
	line, err := ReadLine(br, 256<<20)
	if err != nil || len(line) != len(big)+1 || !bytes.Equal(line[:len(big)], big) {
		t.Fatalf("big line: %d bytes, %v", len(line), err)
	}
	line, err = ReadLine(br, 256<<20)
	if err != nil || string(line) != "{}\n" {
		t.Errorf("next line %q, %v", line, err)
	}
}

// TestReadLineHead: of a line over the cap only the first HeadBytes come
// back, however long it is.
func TestReadLineHead(t *testing.T) {
	big := bytes.Repeat([]byte("h"), 3*HeadBytes)
	br := bufio.NewReaderSize(bytes.NewReader(append(big, "\nok\n"...)), 16)
	head, err := ReadLine(br, 100)
	if !errors.Is(err, ErrTooLong) || len(head) != HeadBytes || !bytes.Equal(head, big[:HeadBytes]) {
		t.Fatalf("head of %d bytes, %v", len(head), err)
	}
	if line, err := ReadLine(br, 100); string(line) != "ok\n" || err != nil {
		t.Errorf("next line %q, %v", line, err)
	}
}

// TestReadLineOneAllocation: a line longer than the reader's buffer comes
// back in a slice of exactly its size (gathered once, not grown), and the
// bytes of the pieces are all there, in order.
func TestReadLineOneAllocation(t *testing.T) {
	var want bytes.Buffer
	for i := range 10_000 {
		fmt.Fprintf(&want, "%d,", i)
	}
	want.WriteByte('\n')
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(want.Bytes()), strings.NewReader("next\n")), 64)
	line, err := ReadLine(br, 1<<20)
	if err != nil || !bytes.Equal(line, want.Bytes()) {
		t.Fatalf("ReadLine = %d bytes, %v; want the %d-byte line", len(line), err, want.Len())
	}
	if cap(line) != len(line) {
		t.Errorf("cap %d for a %d-byte line: grown rather than allocated at its size", cap(line), len(line))
	}
	if line, err := ReadLine(br, 1<<20); string(line) != "next\n" || err != nil {
		t.Errorf("the next line: %q, %v", line, err)
	}
}

// TestReadLineGarbage: a line longer than the buffer costs its own size in
// allocations and little more: the blocks that gather it are reused from
// line to line. (Copying each full buffer anew, as before, cost twice the
// line.) The collector is off while it counts, so that the pool is not
// emptied under it; with -race, sync.Pool drops a quarter of what it is
// given, on purpose, which costs about a quarter more: hence 1.5.
func TestReadLineGarbage(t *testing.T) {
	const size, lines = 1 << 20, 8
	line := append(bytes.Repeat([]byte("x"), size-1), '\n')
	input := bytes.Repeat(line, lines+1)
	br := bufio.NewReaderSize(bytes.NewReader(input), 16<<10)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if _, err := ReadLine(br, 2*size); err != nil { // fills the pool
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range lines {
		if got, err := ReadLine(br, 2*size); err != nil || len(got) != size {
			t.Fatalf("a line of %d bytes, %v; want %d", len(got), err, size)
		}
	}
	runtime.ReadMemStats(&after)
	if per := float64(after.TotalAlloc-before.TotalAlloc) / lines; per > 1.5*size {
		t.Errorf("a %d-byte line allocated %.0f bytes, want at most 1.5 times its size", size, per)
	}
}
