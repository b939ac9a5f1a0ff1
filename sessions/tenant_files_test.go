//go:build unix

package sessions

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
)

// TestTranscriptPlanted: the session may write its CLI config directory,
// where its transcript lies; the server, which has no ceiling, reads it
// when the session goes to sleep (to store it) and for the history, and
// writes the stored one back when another instance wakes the session. A
// link to a file outside (the server's own, another user's transcript), a
// named pipe and a directory planted at the transcript, a link on the way
// to it, and a link at the old fixed temporary name: nothing outside is
// read into the store or the history, nothing outside is written, and
// nothing hangs.
func TestTranscriptPlanted(t *testing.T) {
	t.Parallel()
	for _, what := range []string{"link", "fifo", "dir", "link on the way", "hard link", "temporary link"} {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			outside := filepath.Join(t.TempDir(), "bob.jsonl")
			secret := `{"type":"user","message":{"role":"user","content":"BOB-SECRET"}}` + "\n"
			if err := os.WriteFile(outside, []byte(secret), 0o600); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(t.TempDir(), "sessions.db")
			cfgA, cfgB := t.TempDir(), t.TempDir()
			a := newManager(t, Config{Store: storeAt(t, db), Env: map[string]string{"CLAUDE_CONFIG_DIR": cfgA}})
			s := create(t, a, CreateOptions{})
			query(t, s, "mine", QueryOptions{})
			src := s.TranscriptPath().String()
			if what != "temporary link" { // else the transcript is the CLI's own
				plantAt(t, src, what, outside)
			}
			if !s.makeDormant("test") { // stores the transcript: never bob's
				t.Fatal("could not make the session dormant")
			}
			if got, _ := a.cfg.Store.ReadTranscript(ctxFor(t), s.ID, s.Info().ClaudeSessionID); strings.Contains(string(got), "BOB-SECRET") {
				t.Fatalf("the store holds the file outside: %q", got)
			}
			for _, e := range s.History() {
				if strings.Contains(e.Text, "BOB-SECRET") {
					t.Fatalf("the history holds the file outside: %q", e.Text)
				}
			}
			// Instance B wakes the session where the same thing is planted
			// in its config directory, or a link at the temporary name the
			// server once wrote the transcript to: nothing is written
			// through.
			dst := history.TranscriptPath(map[string]string{"CLAUDE_CONFIG_DIR": cfgB}, s.Info().Cwd, s.Info().ClaudeSessionID).String()
			if what == "temporary link" {
				plantAt(t, dst+".part", "link", outside)
			} else {
				plantAt(t, dst, what, outside)
			}
			b := newManager(t, Config{Store: storeAt(t, db), Env: map[string]string{"CLAUDE_CONFIG_DIR": cfgB}})
			bs, err := b.Get(s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if what == "temporary link" {
				// Its start writes the stored transcript, where nothing is
				// (the other cases' CLI would write through what was
				// planted: its own business, in its jail).
				query(t, bs, "again", QueryOptions{})
			}
			for _, e := range bs.History() {
				if strings.Contains(e.Text, "BOB-SECRET") {
					t.Fatalf("B's history holds the file outside: %q", e.Text)
				}
			}
			if got, _ := os.ReadFile(outside); string(got) != secret {
				t.Fatalf("the file outside was written: %q", got)
			}
			if what == "temporary link" {
				// Nothing was planted there: the stored transcript is.
				if got, err := os.ReadFile(dst); err != nil || !strings.Contains(string(got), "mine") {
					t.Errorf("B's transcript: %q, %v", got, err)
				}
			}
		})
	}
}

// plantAt replaces path with what: a link to target, a named pipe, a
// directory, a link to target's directory in place of path's, or a hard
// link to target.
func plantAt(t *testing.T, path, what, target string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	var err error
	switch what {
	case "link":
		err = os.Symlink(target, path)
	case "fifo":
		err = syscall.Mkfifo(path, 0o600)
	case "dir":
		err = os.Mkdir(path, 0o700)
	case "hard link":
		err = os.Link(target, path)
	case "link on the way":
		// The project's directory becomes a link to one holding a file of
		// the transcript's name.
		dir := filepath.Dir(path)
		if err = os.RemoveAll(dir); err == nil {
			other := filepath.Dir(target)
			if err = os.Link(target, filepath.Join(other, filepath.Base(path))); err == nil || os.IsExist(err) {
				err = os.Symlink(other, dir)
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestImagesPlanted: an image path names a file in the session's
// directory, where the session may plant a link to an image outside the
// roots, a named pipe (never waited on) or a hard link to the image
// outside: nothing outside is read.
func TestImagesPlanted(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	m := newManager(t, Config{AllowedRoots: []string{root}})
	outside := filepath.Join(t.TempDir(), "b.png")
	if err := os.WriteFile(outside, pngBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	plantAt(t, filepath.Join(root, "link.png"), "link", outside)
	plantAt(t, filepath.Join(root, "fifo.png"), "fifo", "")
	plantAt(t, filepath.Join(root, "hard.png"), "hard link", outside)
	for name, want := range map[string]string{"link.png": "--allowed-roots", "fifo.png": "not a readable file", "hard.png": "more than one hard link"} {
		if _, err := m.LoadImages(root, []images.Input{{Path: name}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadImages(%s) = %v, want %q", name, err, want)
		}
	}
}
