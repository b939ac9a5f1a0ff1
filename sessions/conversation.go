package sessions

import (
	"fmt"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// A session's conversation: the history it keeps in memory (package
// history bounds it), seeded from the CLI's transcript on resume, and the
// transcript itself.

// History returns the conversation so far, oldest first. For a session
// that continues an earlier conversation (resumeSessionId, or restored
// after a restart) it starts with what the CLI's transcript held then.
// Once older entries were dropped from memory (history.MaxBytes), they are
// read from the transcript: the whole conversation as the CLI recorded it.
func (s *Session) History() []history.Entry {
	s.mu.Lock()
	mem := s.history.Entries()
	dropped := s.history.Dropped()
	path := s.transcriptPathLocked()
	s.mu.Unlock()
	if dropped == 0 {
		return mem
	}
	if all, err := history.Load(path); err == nil && len(all) >= len(mem) {
		return all
	}
	note := history.Entry{Kind: "text", Text: fmt.Sprintf("[%d older entries are not kept in memory, and the transcript %s that holds them cannot be read]", dropped, path)}
	return append([]history.Entry{note}, mem...)
}

// recordTurn appends a finished turn to the history, its prompt with the
// uuid it was sent with (id); s.mu is held.
func (s *Session) recordTurn(prompt, id string, started time.Time, t *turn.Turn) {
	s.addHistoryLocked(history.Entry{Kind: "prompt", Text: prompt, Time: started, ID: id})
	s.recordSteps(t)
}

// recordSteps adds the steps of t to the history; s.mu is held.
func (s *Session) recordSteps(t *turn.Turn) {
	for _, e := range t.Steps() {
		s.addHistoryLocked(e)
	}
}

// addHistoryLocked appends e to the history in memory; s.mu is held.
func (s *Session) addHistoryLocked(e history.Entry) { s.history.Add(e, s.transcriptName) }

// setHistoryLocked replaces the history with h (a transcript's); s.mu is
// held.
func (s *Session) setHistoryLocked(h []history.Entry) { s.history.Set(h, s.transcriptName) }

// transcriptName is transcriptPathLocked as a note names it; s.mu is held.
func (s *Session) transcriptName() string { return s.transcriptPathLocked().String() }

// transcriptPathLocked is this session's transcript, beneath its CLI config
// directory, which the session may write; s.mu is held.
func (s *Session) transcriptPathLocked() beneath.Path {
	id := s.claudeSessionID
	if s.forkPending || id == "" {
		id = s.opts.ResumeSessionID // the fork's own transcript does not exist yet
	}
	return s.transcriptPathFor(id)
}

// transcriptPathFor is where the CLI keeps the transcript of conversation
// id of this session; s.mu is held.
func (s *Session) transcriptPathFor(id string) beneath.Path {
	env := mergeEnv(s.m.cfg.Env, s.profileEnv, s.m.ownerEnv(s.opts.Owner), s.opts.Env)
	return history.TranscriptPath(env, s.cwdLocked(), id)
}

// TranscriptPath is the file in which the CLI keeps this session's whole
// conversation.
func (s *Session) TranscriptPath() beneath.Path {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.transcriptPathLocked()
}

// canReplay reports whether the session has a recorded conversation to
// seed a fresh one with.
func (s *Session) canReplay() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.history.Len() > 0
}
