package claudeagent

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// File checkpoints against the fake CLI: FileCheckpoints sets the CLI's
// variable (Env still wins), and RewindFiles sends rewind_files with the
// user message's uuid and decodes the answer, a refusal included.

func TestFileCheckpointsEnviron(t *testing.T) {
	t.Setenv(checkpointsEnv, "")
	get := func(o Options) string {
		for _, kv := range o.Environ("/w") {
			if k, v, _ := strings.Cut(kv, "="); k == checkpointsEnv {
				return v
			}
		}
		return ""
	}
	if v := get(Options{}); v != "" {
		t.Errorf("without FileCheckpoints the CLI gets %s=%q", checkpointsEnv, v)
	}
	if v := get(Options{FileCheckpoints: true}); v != "true" {
		t.Errorf("with FileCheckpoints the CLI gets %s=%q, want true", checkpointsEnv, v)
	}
	if v := get(Options{FileCheckpoints: true, Env: map[string]string{checkpointsEnv: "0"}}); v != "0" {
		t.Errorf("Env did not win over FileCheckpoints: %q", v)
	}
}

func TestFakeRewindFiles(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	opts := fakeOptions(t)
	opts.FileCheckpoints = true
	p := startFake(t, opts)
	initialize(t, p)
	ids := []string{"00000000-0000-4000-8000-0000000000a1", "00000000-0000-4000-8000-0000000000a2"}
	for _, id := range ids {
		if err := p.SendUserID("hi", id); err != nil {
			t.Fatal(err)
		}
		untilResult(t, p)
	}
	// The fake's turns stand for a new file each (/CWD/turn<n>.txt).
	file := func(n string) string { return filepath.Join(opts.Cwd, "turn"+n+".txt") }
	r, err := p.RewindFiles(ctx, ids[0], true)
	if err != nil || !r.CanRewind || !slices.Equal(r.FilesChanged, []string{file("1"), file("2")}) || r.Deletions != 2 {
		t.Fatalf("dry run to the first message = %+v, %v", r, err)
	}
	if r, err := p.RewindFiles(ctx, ids[1], false); err != nil || !r.CanRewind {
		t.Fatalf("rewind to the second message = %+v, %v", r, err)
	}
	if r, err := p.RewindFiles(ctx, ids[0], true); err != nil || !slices.Equal(r.FilesChanged, []string{file("1")}) {
		t.Errorf("dry run after the rewind = %+v, %v; want the first turn's file alone", r, err)
	}
	// An unknown message: a dry run says why, a rewind is refused.
	unknown := "00000000-0000-4000-8000-0000000000ff"
	if r, err := p.RewindFiles(ctx, unknown, true); err != nil || r.CanRewind || r.Error != "No file checkpoint found for this message." {
		t.Errorf("dry run to an unknown message = %+v, %v", r, err)
	}
	var ce *ControlError
	if _, err := p.RewindFiles(ctx, unknown, false); !errors.As(err, &ce) || ce.Subtype != "rewind_files" || ce.Message != "No file checkpoint found for this message." {
		t.Errorf("rewind to an unknown message: %v", err)
	}
}

func TestFakeRewindFilesOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	p := startFake(t, fakeOptions(t, checkpointsEnv, ""))
	initialize(t, p)
	id := "00000000-0000-4000-8000-0000000000a1"
	if err := p.SendUserID("hi", id); err != nil {
		t.Fatal(err)
	}
	untilResult(t, p)
	if r, err := p.RewindFiles(ctx, id, true); err != nil || r.CanRewind || r.Error != "File rewinding is not enabled." {
		t.Errorf("dry run without checkpoints = %+v, %v", r, err)
	}
	var ce *ControlError
	if _, err := p.RewindFiles(ctx, id, false); !errors.As(err, &ce) || ce.Message != "File rewinding is not enabled." {
		t.Errorf("rewind without checkpoints: %v", err)
	}
}
