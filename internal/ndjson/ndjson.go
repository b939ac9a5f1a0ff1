// Package ndjson reads newline-delimited frames of bounded size: the one
// line reader behind the CLI's stdout (claudeagent) and the server's stdin
// (mcptools).
package ndjson

import (
	"bufio"
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
func ReadLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong && len(line)+len(chunk) > limit {
			tooLong = true
			line = line[:min(len(line), HeadBytes)]
		}
		if !tooLong {
			line = append(line, chunk...)
		} else if room := HeadBytes - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			if err == nil {
				return line, ErrTooLong
			}
			return line, errors.Join(ErrTooLong, err)
		}
		return line, err
	}
}
