// Package ndjson reads newline-delimited frames of bounded size: the one
// line reader behind the CLI's stdout (claudeagent) and the server's stdin
// (mcptools).
package ndjson

import (
	"bufio"
	"errors"
	"sync"
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
// line longer than r's buffer is gathered first in blocks that are reused
// from line to line (a pool), not by growing one slice, whose repeated
// copies made a 2 MB line cost five times its size in copying and garbage,
// nor in fresh copies of each full buffer (as bufio.Reader.ReadBytes
// does), which made it cost twice its size in garbage.
func ReadLine(r *bufio.Reader, limit int) ([]byte, error) {
	var (
		g    gather // the full buffers before the last piece
		head []byte // a line over limit: its first HeadBytes
	)
	defer g.release()
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case head == nil && g.n+len(chunk) > limit:
			head = g.concat(chunk, HeadBytes)
			g.release()
		case head != nil:
			if room := HeadBytes - len(head); room > 0 {
				head = append(head, chunk[:min(len(chunk), room)]...)
			}
		case errors.Is(err, bufio.ErrBufferFull):
			g.add(chunk)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if head == nil {
			return g.concat(chunk, g.n+len(chunk)), err
		}
		if err == nil {
			return head, ErrTooLong
		}
		return head, errors.Join(ErrTooLong, err)
	}
}

// blockSize is the size of the blocks that gather a long line.
const blockSize = 64 << 10

// blocks are the pooled blocks of gather. A pool lets the garbage
// collector take them back from an idle process.
var blocks = sync.Pool{New: func() any { b := make([]byte, 0, blockSize); return &b }}

// gather holds the pieces of a line read so far, n bytes in pooled blocks.
type gather struct {
	blocks []*[]byte
	n      int
}

// add appends p, copied.
func (g *gather) add(p []byte) {
	g.n += len(p)
	for len(p) > 0 {
		if len(g.blocks) == 0 || len(*g.blocks[len(g.blocks)-1]) == blockSize {
			g.blocks = append(g.blocks, blocks.Get().(*[]byte))
		}
		b := g.blocks[len(g.blocks)-1]
		k := min(len(p), blockSize-len(*b))
		*b = append(*b, p[:k]...)
		p = p[k:]
	}
}

// concat returns up to max bytes of what g holds followed by last, in one
// new slice.
func (g *gather) concat(last []byte, max int) []byte {
	out := make([]byte, 0, min(g.n+len(last), max))
	for _, b := range g.blocks {
		out = append(out, (*b)[:min(len(*b), cap(out)-len(out))]...)
	}
	return append(out, last[:min(len(last), cap(out)-len(out))]...)
}

// release returns g's blocks to the pool and empties g.
func (g *gather) release() {
	for _, b := range g.blocks {
		*b = (*b)[:0]
		blocks.Put(b)
	}
	g.blocks, g.n = nil, 0
}
