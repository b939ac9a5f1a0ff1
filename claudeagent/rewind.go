package claudeagent

import (
	"context"
	"encoding/json"
	"fmt"
)

// RewindResult is the CLI's answer to rewind_files (the same shape in both
// pinned CLIs; 2.1.330 adds skippedLinks, a count this package ignores).
type RewindResult struct {
	// CanRewind is false when the CLI cannot rewind to that message; Error
	// then says why (a dry run only: a refused rewind is an error).
	CanRewind bool   `json:"canRewind"`
	Error     string `json:"error,omitempty"`
	// FilesChanged, Insertions and Deletions are what a dry run would
	// change: absolute paths and line counts.
	FilesChanged []string `json:"filesChanged,omitempty"`
	Insertions   int      `json:"insertions,omitempty"`
	Deletions    int      `json:"deletions,omitempty"`
}

// RewindFiles restores the files the CLI's tools changed since the user
// message userMessageID (the uuid it was sent with, see
// [Process.SendUserID]) to their content before it, or with dryRun only
// says what that would change. It needs a process started with
// Options.FileCheckpoints. The CLI answers a dry run it cannot do with
// CanRewind false and Error, and refuses a rewind it cannot do with a
// [*ControlError] ("No file checkpoint found for this message.", "File
// rewinding is not enabled.").
func (p *Process) RewindFiles(ctx context.Context, userMessageID string, dryRun bool) (*RewindResult, error) {
	payload, err := p.Control(ctx, "rewind_files", map[string]any{"user_message_id": userMessageID, "dry_run": dryRun})
	if err != nil {
		return nil, err
	}
	var r RewindResult
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, fmt.Errorf("decoding rewind_files response: %w", err)
	}
	return &r, nil
}
