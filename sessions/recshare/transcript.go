package recshare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/recstore"
)

// Transcripts: after each turn the new bytes of the CLI's transcript file
// go into the store (SaveTranscript), so that an instance on another
// machine, with a CLI config directory of its own, writes the transcript
// there before it resumes the conversation (PlaceTranscript).

// SaveTranscript appends to the store what the transcript file at path,
// of conversation claudeID of session id, holds beyond what is stored. It
// reads only the new bytes: the offset stored is remembered per
// transcript (after a restart the first save sends the whole file, which
// the store skips as far as it has it). The session may write where the
// file lies: it is opened without following a link, must be a regular
// file of one link, and is read up to history.MaxTranscriptBytes.
func (i *Instance) SaveTranscript(ctx context.Context, id, claudeID string, path beneath.Path) error {
	if i.cfg.Store == nil || claudeID == "" || path.IsZero() {
		return nil
	}
	key := id + "/" + claudeID
	i.mu.Lock()
	off := i.offsets[key]
	i.mu.Unlock()
	f, err := beneath.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // the CLI has not written it yet
	}
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := readFrom(f, off, history.MaxTranscriptBytes)
	if err != nil || len(data) == 0 {
		return err
	}
	l, lost := i.leaseOf(id)
	if lost != nil {
		return lost
	}
	err = i.cfg.Store.AppendTranscript(ctx, recstore.Chunk{ID: id, ClaudeSessionID: claudeID, Offset: off, Data: data}, l)
	if errors.Is(err, recstore.ErrGap) && off > 0 {
		i.mu.Lock()
		delete(i.offsets, key) // the store has less than we thought: send it all again next time
		i.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("storing the transcript of session %s: %w", id, err)
	}
	i.mu.Lock()
	i.offsets[key] = off + int64(len(data))
	i.mu.Unlock()
	return nil
}

// PlaceTranscript writes the stored transcript of conversation claudeID of
// session id to path when nothing is there (another machine ran the
// session), so that the CLI can resume it. It reports whether it wrote.
// The session may write where the file goes: nothing it planted there (a
// link, a named pipe, a directory, a file) is written through or
// replaced, and no link on the way is followed (package beneath).
func (i *Instance) PlaceTranscript(ctx context.Context, id, claudeID string, path beneath.Path) (bool, error) {
	if i.cfg.Store == nil || claudeID == "" || path.IsZero() {
		return false, nil
	}
	if there, err := beneath.Exists(path); there || err != nil {
		return false, err
	}
	data, err := i.cfg.Store.ReadTranscript(ctx, id, claudeID)
	if err != nil || len(data) == 0 {
		return false, err
	}
	if err := beneath.WriteNew(path, data, 0o600); err != nil {
		return false, err
	}
	i.mu.Lock()
	i.offsets[id+"/"+claudeID] = int64(len(data))
	i.mu.Unlock()
	return true, nil
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
