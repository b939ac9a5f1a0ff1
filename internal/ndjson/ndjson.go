// Package ndjson reads newline-delimited frames of bounded size: the one
// line reader behind the CLI's stdout (claudeagent) and the server's stdin
// (mcptools).
package ndjson

import (
	"bufio"
	"bytes"
	"errors"
)

// ErrTooLong reports a line over the cap; the rest of it was consumed and
// discarded.
var ErrTooLong = errors.New("line too long")

// HeadBytes is how much of a line over the cap [ReadLine] keeps, so that a
// caller can still read, say, a request id at its start.
const HeadBytes = 4 << 10

// ReadLine reads one '\n'-terminated line (the newline included) of up to
// limit bytes. A longer line is consumed to its end and ErrTooLong returned
// together with its first [HeadBytes] bytes. At the end of input the last
// line comes with io.EOF; another read error comes with what was read.
//
// The line is the caller's own slice, allocated once at its final size: a
// line longer than r's buffer is gathered as copies of the full buffers
// first (as bufio.Reader.ReadBytes does), not by growing one slice, whose
// repeated copies made a 2 MB line cost five times its size in copying
// and garbage.
func ReadLine(r *bufio.Reader, limit int) ([]byte, error) {
	var (
		full [][]byte // copies of the full buffers before the last piece
		n    int      // bytes in full
		head []byte   // a line over limit: its first HeadBytes
	)
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case head == nil && n+len(chunk) > limit:
			head = concat(full, n, chunk, HeadBytes)
			full = nil
		case head != nil:
			if room := HeadBytes - len(head); room > 0 {
				head = append(head, chunk[:min(len(chunk), room)]...)
			}
		case errors.Is(err, bufio.ErrBufferFull):
			full = append(full, bytes.Clone(chunk))
			n += len(chunk)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if head == nil {
			return concat(full, n, chunk, n+len(chunk)), err
		}
		if err == nil {
			return head, ErrTooLong
		}
		return head, errors.Join(ErrTooLong, err)
	}
}

// concat returns up to max bytes of the pieces in full (n bytes together)
// followed by last, in one new slice.
func concat(full [][]byte, n int, last []byte, max int) []byte {
	out := make([]byte, 0, min(n+len(last), max))
	for _, b := range full {
		out = append(out, b[:min(len(b), cap(out)-len(out))]...)
	}
	return append(out, last[:min(len(last), cap(out)-len(out))]...)
}
