package sessions

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// The store keeps what a caller has seen. A turn's end writes, before its
// answer goes to the caller, the session's history's new entries and then
// its record, whose LastMessage (the uuid of the turn's last assistant
// message) marks the turn stored: that is enough to continue the
// conversation on another instance, by replaying the history into a fresh
// conversation. The CLI's transcript, which a resume needs, follows as the
// CLI writes it (up to seconds after the result with 2.1.197): read again
// until it holds the mark (followTranscript). An instance that takes the
// session up makes its conversation whole before the CLI starts
// (wholeConversation): it resumes the transcript that holds the mark — its
// own, or the stored one written in its place — or, when none does,
// replays the stored history into a fresh conversation.

// transcriptWait bounds how long the transcript is followed after a turn:
// the CLI writes it within seconds, and its process's end stores it whole.
const transcriptWait = 15 * time.Second

// transcriptEvery is how often a followed transcript is read again.
const transcriptEvery = 100 * time.Millisecond

// storeHistory appends to the store the history's entries it lacks. Hold
// no lock.
func (m *Manager) storeHistory(ctx context.Context, s *Session) error {
	s.mu.Lock()
	entries, seq, total := s.history.Since(s.histAbs), s.histSeq, s.history.Total()
	s.mu.Unlock()
	if len(entries) == 0 || !m.share.Stored() {
		return nil
	}
	if err := m.share.AppendHistory(ctx, s.ID, seq, entries); err != nil {
		return err
	}
	s.mu.Lock()
	if s.histSeq == seq { // no other write stored them meanwhile
		s.histSeq, s.histAbs = seq+len(entries), total
	}
	s.mu.Unlock()
	return nil
}

// saveTranscript stores the transcript's new bytes, and reports whether
// the stored transcript holds the last turn. Hold no lock.
func (m *Manager) saveTranscript(s *Session) bool {
	s.transcriptMu.Lock()
	defer s.transcriptMu.Unlock()
	s.mu.Lock()
	id, path, mark := s.claudeSessionID, s.transcriptPathLocked(), s.lastMessage
	s.mu.Unlock()
	has, err := m.share.SaveTranscript(context.Background(), s.ID, id, path, mark)
	if err != nil {
		s.log.Warn("storing the transcript", "err", err)
	}
	return has || mark == ""
}

// followTranscript stores the transcript as the CLI writes it, until the
// stored one holds the last turn or transcriptWait passes, in the
// background; one follower a session.
func (m *Manager) followTranscript(s *Session) {
	s.mu.Lock()
	if s.following {
		s.mu.Unlock()
		return
	}
	s.following = true
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			s.following = false
			s.mu.Unlock()
		}()
		deadline := time.Now().Add(transcriptWait)
		for !m.saveTranscript(s) && time.Now().Before(deadline) {
			s.mu.Lock()
			gone := s.proc == nil || s.st.State() == state.Closed
			s.mu.Unlock()
			if gone {
				return // the process's end stored it (released)
			}
			time.Sleep(transcriptEvery)
		}
	}()
}

// wholeConversation makes s's conversation whole for the CLI about to
// start: the transcript the CLI resumes must hold the last turn the store
// recorded (LastMessage). This machine's, when it does; else the stored
// one, written in its place; else, when no transcript holds it (the
// instance that ran the turn was killed before its CLI wrote it), a fresh
// conversation that replays the stored history. Hold no lock.
func (m *Manager) wholeConversation(ctx context.Context, s *Session) {
	s.mu.Lock()
	path, id, mark := s.transcriptPathLocked(), s.claudeSessionID, s.lastMessage
	resumable := s.resumable && !s.forkPending && s.proc == nil
	s.mu.Unlock()
	if !resumable {
		return
	}
	here, localErr := transcriptHolds(path, mark)
	if here || localErr != nil && !errors.Is(localErr, fs.ErrNotExist) {
		if localErr != nil {
			s.log.Warn("reading the transcript to resume", "path", path, "err", localErr)
		}
		return
	}
	stored, data, err := m.share.StoredTranscriptHas(ctx, s.ID, id, mark)
	if err != nil {
		s.log.Warn("reading the stored transcript", "err", err)
	}
	if stored {
		exists := localErr == nil // this machine's lacks the last turn: replaced
		if werr := m.share.PlaceTranscript(s.ID, id, path, data, exists); werr != nil {
			s.log.Warn("writing the stored transcript for --resume", "path", path, "err", werr)
		} else {
			s.log.Info("wrote the session's transcript from the session store (another instance ran its last turn)", "path", path)
			return
		}
	}
	if mark == "" {
		return // no turn recorded: the CLI says whether it has the conversation
	}
	s.mu.Lock()
	lost := s.claudeSessionID
	if s.history.Len() > 0 {
		s.setClaudeSessionIDLocked(uuid.NewString())
		s.resumable, s.forkPending, s.replay = false, false, true
	}
	replay := s.replay
	s.mu.Unlock()
	if replay {
		s.log.Warn("no transcript holds the session's last turn (the instance that ran it was killed before its CLI wrote it): a fresh conversation replays the session's stored history",
			"lost_claude_session_id", lost, "last_message", mark, "stored_transcript_bytes", len(data))
	}
}

// transcriptHolds reports whether the transcript at path holds mark (""
// is held by a transcript that exists); fs.ErrNotExist when there is none.
// It reads the file a block at a time, the blocks overlapping by the
// mark's length.
func transcriptHolds(path beneath.Path, mark string) (bool, error) {
	f, err := beneath.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	want := []byte(mark)
	buf := make([]byte, 0, 1<<20)
	for read := int64(0); read < history.MaxTranscriptBytes; {
		keep := buf[max(0, len(buf)-len(want)):]
		buf = append(buf[:0], keep...)
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf, read = buf[:len(buf)+n], read+int64(n)
		if bytes.Contains(buf, want) {
			return true, nil
		}
		if err != nil {
			return false, nil
		}
	}
	return false, nil
}
