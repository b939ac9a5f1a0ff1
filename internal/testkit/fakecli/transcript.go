package fakecli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The fake keeps a transcript as the CLI does, at <config dir>/projects/
// <cwd with every character but ASCII letters and digits made '-'>/<session
// id>.jsonl (the config dir is CLAUDE_CONFIG_DIR, else $HOME/.claude): a
// line for each user message it reads and each assistant message of the
// main conversation it writes, with the uuids the stream carries. With
// EnvTranscriptLag the lines are written that long after (CLI 2.1.197
// writes its transcript up to seconds after a turn's result).

// transcript writes the fake's transcript lines.
type transcript struct {
	mu   sync.Mutex
	path string
	lag  time.Duration
}

func newTranscript(sid string) *transcript {
	dir := os.Getenv("CLAUDE_CONFIG_DIR")
	if dir == "" {
		dir = filepath.Join(os.Getenv("HOME"), ".claude")
	}
	cwd, _ := os.Getwd()
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, cwd)
	lag, _ := time.ParseDuration(os.Getenv(EnvTranscriptLag))
	return &transcript{path: filepath.Join(dir, "projects", slug, sid+".jsonl"), lag: lag}
}

// title writes the session's display name as the CLI does for --name and
// the control request rename_session: a custom-title line.
func (t *transcript) title(sid, title string) {
	line, _ := json.Marshal(map[string]string{"type": "custom-title", "customTitle": title, "sessionId": sid})
	t.write(line)
}

// note writes line to the transcript when it is a user message or an
// assistant message of the main conversation (after the lag, if any).
func (t *transcript) note(line []byte) {
	if t == nil || !(bytes.Contains(line, []byte(`"type":"user"`)) || bytes.Contains(line, []byte(`"type":"assistant"`)) &&
		bytes.Contains(line, []byte(`"parent_tool_use_id":null`))) {
		return
	}
	t.write(line)
}

// write appends line to the transcript (after the lag, if any).
func (t *transcript) write(line []byte) {
	if t == nil {
		return
	}
	line = append(bytes.Clone(line), '\n')
	if t.lag > 0 {
		time.AfterFunc(t.lag, func() { t.appendLine(line) })
		return
	}
	t.appendLine(line)
}

// appendLine appends line, newline included, to the transcript.
func (t *transcript) appendLine(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write(line)
	f.Close()
}
