package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Transcripts: after each turn the new bytes of the CLI's transcript file
// go into the store (SaveTranscript), so that an instance on another
// machine, with a CLI config directory of its own, writes the transcript
// there before it resumes the conversation (PlaceTranscript).

// SaveTranscript appends to the store what the transcript file at path,
// of conversation claudeID of session id, holds beyond what is stored,
// and reports whether the transcript stored holds mark (the uuid of the
// last turn's last message: the CLI writes its transcript lazily, up to
// seconds after the turn's result). It reads only the new bytes: the
// offset stored is remembered per transcript (after a restart the first
// save sends the whole file, which the store skips as far as it has it).
// The session may write where the file lies: it is opened without
// following a link, must be a regular file of one link, and is read up to
// history.MaxTranscriptBytes.
func (i *Instance) SaveTranscript(ctx context.Context, id, claudeID string, path beneath.Path, mark string) (bool, error) {
	if i.cfg.Store == nil || claudeID == "" || path.IsZero() {
		return false, nil
	}
	key := id + "/" + claudeID
	i.mu.Lock()
	off, tail, found := i.offsets[key], i.tails[key], i.found[key] == mark && mark != ""
	i.mu.Unlock()
	f, err := beneath.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // the CLI has not written it yet
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	data, err := readFrom(f, off, history.MaxTranscriptBytes)
	if err != nil || len(data) == 0 {
		return found, err
	}
	l, lost := i.leaseOf(id)
	if lost != nil {
		return false, lost
	}
	err = i.cfg.Store.AppendTranscript(ctx, store.Chunk{ID: id, ClaudeSessionID: claudeID, Offset: off, Data: data}, l)
	if errors.Is(err, store.ErrGap) && off > 0 {
		i.mu.Lock()
		delete(i.offsets, key) // the store has less than we thought: send it all again next time
		delete(i.tails, key)
		i.mu.Unlock()
	}
	if err != nil {
		return false, fmt.Errorf("storing the transcript of session %s: %w", id, err)
	}
	// The mark may be in these bytes, or straddle them and the last ones.
	m := []byte(mark)
	edge := append(slices.Clone(tail), data[:min(len(data), tailBytes)]...)
	found = found || mark != "" && (bytes.Contains(data, m) || bytes.Contains(edge, m))
	if len(data) >= tailBytes {
		edge = data
	}
	i.mu.Lock()
	i.offsets[key] = off + int64(len(data))
	i.tails[key] = bytes.Clone(edge[max(0, len(edge)-tailBytes):])
	if found {
		i.found[key] = mark
	}
	i.mu.Unlock()
	return found, nil
}

// tailBytes is how much of a transcript's end is kept to find a mark
// that straddles two saves: more than a uuid.
const tailBytes = 256

// StoredTranscriptHas reports whether the stored transcript of
// conversation claudeID of session id holds mark ("" is held by any).
func (i *Instance) StoredTranscriptHas(ctx context.Context, id, claudeID, mark string) (bool, []byte, error) {
	if i.cfg.Store == nil || claudeID == "" {
		return false, nil, nil
	}
	data, err := i.cfg.Store.ReadTranscript(ctx, id, claudeID)
	if err != nil {
		return false, nil, err
	}
	return len(data) > 0 && bytes.Contains(data, []byte(mark)), data, nil
}

// AppendHistory appends entries, numbered from seq, to the stored history
// of session id, under its lease: what a fresh CLI is seeded with when no
// transcript holds the whole conversation.
func (i *Instance) AppendHistory(ctx context.Context, id string, seq int, entries []history.Entry) error {
	if i.cfg.Store == nil || len(entries) == 0 {
		return nil
	}
	l, lost := i.leaseOf(id)
	if lost != nil {
		return lost
	}
	err := i.cfg.Store.AppendHistory(ctx, id, seq, entries, l)
	if errors.Is(err, store.ErrFenced) {
		i.lose(id, err)
	}
	return i.wrote(id, err)
}

// ReadHistory returns the stored history of session id (nil without a
// store).
func (i *Instance) ReadHistory(ctx context.Context, id string) ([]history.Entry, error) {
	if i.cfg.Store == nil {
		return nil, nil
	}
	return i.cfg.Store.ReadHistory(ctx, id)
}

// PlaceTranscript writes data, the stored transcript of conversation
// claudeID of session id, to path where the CLI reads it, so that it can
// resume the conversation: where nothing is (another machine ran the
// session), or, with replace, over the file there, which lacks the last
// turns (its CLI was killed before it wrote them). The session may write
// where the file goes: nothing it planted there (a link, a named pipe, a
// directory) is written through, and no link on the way is followed
// (package beneath).
func (i *Instance) PlaceTranscript(id, claudeID string, path beneath.Path, data []byte, replace bool) error {
	if i.cfg.Store == nil || claudeID == "" || path.IsZero() || len(data) == 0 {
		return nil
	}
	write := beneath.WriteNew
	if replace {
		write = beneath.Replace
	}
	if err := write(path, data, 0o600); err != nil {
		return err
	}
	i.mu.Lock()
	key := id + "/" + claudeID
	i.offsets[key] = int64(len(data))
	i.tails[key] = bytes.Clone(data[max(0, len(data)-tailBytes):])
	i.mu.Unlock()
	return nil
}

// readFrom reads what f holds from off to its size now, in one buffer of
// that size (a turn can add megabytes: io.ReadAll's doublings would
// allocate about twice as much). Bytes the CLI appends meanwhile are left
// for the next save; a file that shrank gives what it still has; a file
// over max is refused.
func readFrom(f *os.File, off, max int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil || st.Size() <= off {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("the transcript %s has %d bytes: %w of %d", f.Name(), st.Size(), beneath.ErrTooLarge, max)
	}
	data := make([]byte, st.Size()-off)
	n, err := io.ReadFull(io.NewSectionReader(f, off, int64(len(data))), data)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return data[:n], err
}
