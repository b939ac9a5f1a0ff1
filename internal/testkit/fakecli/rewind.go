package fakecli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// File checkpoints, as the rewind_files and rewind_off captures show them.
// With CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING set (and
// CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING not), every user message that
// starts a turn is a checkpoint, known by the message's uuid, and written
// to the transcript as the CLI writes it (a file-history-snapshot line),
// so that a process that resumes the conversation knows it too. The fake
// changes no file: each turn stands for one new file of one line,
// /CWD/turn<n>.txt (n its checkpoint's place, from 1), which a dry run
// lists and a rewind takes back. Without checkpoints, and for a uuid that
// is no checkpoint, both answer as the captures do.

// checkpoints are the fake's file checkpoints.
type checkpoints struct {
	on bool
	mu sync.Mutex
	// ids are the checkpoints' uuids, oldest first; changed says whether
	// each one's turn's file is still there (not rewound).
	ids     []string
	changed []bool
}

// checkpointsOn reports whether the environment turns checkpoints on, as
// 2.1.197 reads it.
func checkpointsOn() bool {
	v := strings.ToLower(os.Getenv("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"))
	return (v == "1" || v == "true" || v == "yes" || v == "on") && os.Getenv("CLAUDE_CODE_DISABLE_FILE_CHECKPOINTING") == ""
}

// add makes uuid a checkpoint, its turn's file changed.
func (c *checkpoints) add(uuid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, uuid)
	c.changed = append(c.changed, true)
}

// checkpoint makes the user message uuid, which starts a turn, a
// checkpoint, in the transcript too.
func (f *fake) checkpoint(uuid string) {
	if !f.ckpt.on {
		return
	}
	if uuid == "" {
		uuid = newUUID() // the CLI gives a message without one its own
	}
	f.ckpt.add(uuid)
	f.trans.write(marshal(map[string]any{"type": "file-history-snapshot", "messageId": uuid, "snapshot": map[string]any{"messageId": uuid}, "isSnapshotUpdate": false}))
}

// resumeCheckpoints reads the checkpoints of the conversation a resume
// continues from its transcript.
func (f *fake) resumeCheckpoints(resumed string) {
	if !f.ckpt.on || resumed == "" {
		return
	}
	file, err := os.Open(newTranscript(resumed).path)
	if err != nil {
		return
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l struct {
			Type      string `json:"type"`
			MessageID string `json:"messageId"`
		}
		if bytes.Contains(sc.Bytes(), []byte(`"file-history-snapshot"`)) && json.Unmarshal(sc.Bytes(), &l) == nil && l.Type == "file-history-snapshot" {
			f.ckpt.add(l.MessageID)
		}
	}
}

// rewindFiles answers rewind_files.
func (f *fake) rewindFiles(id string, req json.RawMessage) {
	var r struct {
		UserMessageID string `json:"user_message_id"`
		DryRun        bool   `json:"dry_run"`
	}
	_ = json.Unmarshal(req, &r)
	refuse := func(why string) {
		if r.DryRun {
			f.controlSuccess(id, marshal(map[string]any{"canRewind": false, "error": why}))
			return
		}
		f.controlError(id, why)
	}
	if !f.ckpt.on {
		refuse(f.rewindRefusal("rewind_off"))
		return
	}
	c := &f.ckpt
	c.mu.Lock()
	defer c.mu.Unlock()
	at := -1
	for i, u := range c.ids {
		if u == r.UserMessageID {
			at = i
		}
	}
	if at < 0 {
		refuse(f.rewindRefusal("rewind_files"))
		return
	}
	if !r.DryRun {
		for i := at; i < len(c.changed); i++ {
			c.changed[i] = false
		}
		f.controlSuccess(id, marshal(map[string]any{"canRewind": true}))
		return
	}
	files := []string{}
	for i := at; i < len(c.changed); i++ {
		if c.changed[i] {
			files = append(files, f.paths.Replace(fmt.Sprintf("/CWD/turn%d.txt", i+1)))
		}
	}
	f.controlSuccess(id, marshal(map[string]any{"canRewind": true, "filesChanged": files, "insertions": 0, "deletions": len(files)}))
}

// rewindRefusal is the CLI's refusal recorded in capture name: its first
// rewind_files error response ("File rewinding is not enabled." in
// rewind_off, "No file checkpoint found for this message." in
// rewind_files).
func (f *fake) rewindRefusal(name string) string {
	c, err := f.caps.get(name)
	if err != nil {
		return err.Error()
	}
	e, _ := c.find(0, "out", func(e *entry) bool { return e.typ == "control_response" && e.subtype == "error" })
	if e == nil {
		return errors.New("fake claude: " + name + ".jsonl has no rewind_files refusal").Error()
	}
	var m struct {
		Response struct {
			Error string `json:"error"`
		} `json:"response"`
	}
	_ = json.Unmarshal(e.Msg, &m)
	return m.Response.Error
}
