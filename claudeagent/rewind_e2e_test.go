package claudeagent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// editingModel answers a main conversation whose last prompt names a step
// of steps with that step's tool calls, and a request that carries tool
// results with "done"; anything else gets the keyword behaviour.
func editingModel(steps map[string][]fakeapi.Block) func(*fakeapi.Request) *fakeapi.Reply {
	return func(r *fakeapi.Request) *fakeapi.Reply {
		if !r.IsMainConversation() {
			return nil
		}
		if len(r.LastToolResults()) > 0 {
			return fakeapi.TextReply("done")
		}
		if calls, ok := steps[strings.TrimSpace(r.LastUserText())]; ok {
			return fakeapi.ToolUseReply("", calls...)
		}
		return nil
	}
}

// TestE2ERewindFiles: with file checkpoints, the CLI rewinds the files its
// tools wrote and edited to their content before a user message, known by
// the uuid the host sent it with; a dry run says which files and how many
// lines; an unknown uuid is refused; and a process that resumes the
// conversation knows the checkpoints still (they are in the transcript).
// Without checkpoints the CLI refuses.
func TestE2ERewindFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	a, b, c := filepath.Join(h.cwd, "a.txt"), filepath.Join(h.cwd, "b.txt"), filepath.Join(h.cwd, "c.txt")
	h.srv.SetHandler(editingModel(map[string][]fakeapi.Block{
		"STEP-ONE": {fakeapi.ToolUse("toolu_w1", "Write", map[string]any{"file_path": a, "content": "alpha\n"}),
			fakeapi.ToolUse("toolu_w2", "Write", map[string]any{"file_path": b, "content": "beta\n"})},
		"STEP-TWO": {fakeapi.ToolUse("toolu_e1", "Edit", map[string]any{"file_path": a, "old_string": "alpha", "new_string": "ALPHA"}),
			fakeapi.ToolUse("toolu_w3", "Write", map[string]any{"file_path": c, "content": "gamma\n"})},
	}))
	id := newUUID()
	opts := h.options()
	opts.SessionID, opts.PermissionMode, opts.FileCheckpoints = id, "acceptEdits", true
	p := h.start(ctx, opts)
	one, two := newUUID(), newUUID()
	for _, step := range []struct{ prompt, uuid string }{{"STEP-ONE", one}, {"STEP-TWO", two}} {
		if err := p.SendUserID(step.prompt, step.uuid); err != nil {
			t.Fatal(err)
		}
		if r, _ := readTurn(ctx, t, p); r.IsError {
			t.Fatalf("%s: %s", step.prompt, r.ErrorText())
		}
	}
	wantFiles(t, map[string]string{a: "ALPHA\n", b: "beta\n", c: "gamma\n"})

	dry := func(p *claudeagent.Process, uuid string, files []string, ins, del int) {
		t.Helper()
		r, err := p.RewindFiles(ctx, uuid, true)
		if err != nil {
			t.Fatalf("dry run to %s: %v", uuid, err)
		}
		if !r.CanRewind || !slices.Equal(r.FilesChanged, files) || r.Insertions != ins || r.Deletions != del {
			t.Errorf("dry run to %s = %+v, want files %v, +%d -%d", uuid, r, files, ins, del)
		}
	}
	dry(p, one, []string{a, b, c}, 0, 3)
	dry(p, two, []string{a, c}, 1, 2)
	if r, err := p.RewindFiles(ctx, newUUID(), true); err != nil || r.CanRewind || r.Error != "No file checkpoint found for this message." {
		t.Errorf("dry run to an unknown message = %+v, %v; want canRewind false and the CLI's reason", r, err)
	}
	var ce *claudeagent.ControlError
	if _, err := p.RewindFiles(ctx, newUUID(), false); !errors.As(err, &ce) || !strings.Contains(ce.Message, "No file checkpoint found") {
		t.Errorf("rewind to an unknown message: %v, want the CLI's refusal", err)
	}
	wantFiles(t, map[string]string{a: "ALPHA\n", b: "beta\n", c: "gamma\n"}) // nothing changed yet
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// A process that resumes the conversation rewinds it.
	opts.SessionID, opts.Resume = "", id
	p = h.start(ctx, opts)
	dry(p, two, []string{a, c}, 1, 2)
	if r, err := p.RewindFiles(ctx, two, false); err != nil || !r.CanRewind {
		t.Fatalf("rewind to STEP-TWO after a resume: %+v, %v", r, err)
	}
	wantFiles(t, map[string]string{a: "alpha\n", b: "beta\n", c: ""})
	if r, err := p.RewindFiles(ctx, one, false); err != nil || !r.CanRewind {
		t.Fatalf("rewind to STEP-ONE: %+v, %v", r, err)
	}
	wantFiles(t, map[string]string{a: "", b: "", c: ""})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// Without checkpoints the CLI refuses.
	opts.FileCheckpoints = false
	p = h.start(ctx, opts)
	if r, err := p.RewindFiles(ctx, one, true); err != nil || r.CanRewind || r.Error != "File rewinding is not enabled." {
		t.Errorf("dry run without checkpoints = %+v, %v; want the CLI's refusal", r, err)
	}
}

// wantFiles checks the files' contents; "" means the file does not exist.
func wantFiles(t *testing.T, want map[string]string) {
	t.Helper()
	for path, body := range want {
		got, err := os.ReadFile(path)
		switch {
		case body == "" && !errors.Is(err, os.ErrNotExist):
			t.Errorf("%s exists (%q, %v), want it gone", filepath.Base(path), got, err)
		case body != "" && string(got) != body:
			t.Errorf("%s = %q (%v), want %q", filepath.Base(path), got, err, body)
		}
	}
}

// BenchmarkE2ECheckpoints times a turn that edits files, with and without
// file checkpoints (BENCHMARKS.md): two processes of the real CLI, one
// each, take turns alternately (each first every other time) so that
// both meet the same machine. A turn
// is one API call with three tool calls — an Edit of each of two source
// files of 40 KB and a Write of a new 8 KB file — and the call with the
// tool results that ends it. It reports each one's milliseconds per turn
// (wall time, and the CLI's CPU time) and what its checkpoints left on
// disk per turn. Run with -bench
// E2ECheckpoints -benchtime 40x, CLAUDE_BIN naming the CLI.
func BenchmarkE2ECheckpoints(b *testing.B) {
	bin := e2eenv.FindClaude(b)
	srv, err := fakeapi.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	sides := []*benchSide{startSide(ctx, b, srv, bin, false), startSide(ctx, b, srv, bin, true)}
	srv.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		if !r.IsMainConversation() {
			return nil
		}
		if len(r.LastToolResults()) > 0 {
			return fakeapi.TextReply("done")
		}
		n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(r.LastUserText()), "EDIT "))
		if err != nil {
			return nil
		}
		dir := ""
		for _, s := range sides {
			// The CLI names its working directory in the system prompt.
			if strings.Contains(r.SystemText(), s.cwd()) {
				dir = s.cwd()
			}
		}
		edit := func(f string) fakeapi.Block {
			return fakeapi.ToolUse("", "Edit", map[string]any{"file_path": filepath.Join(dir, f),
				"old_string": fmt.Sprintf("marker(%d)", n), "new_string": fmt.Sprintf("marker(%d)", n+1)})
		}
		return fakeapi.ToolUseReply("", edit("one.go"), edit("two.go"), fakeapi.ToolUse("", "Write", map[string]any{
			"file_path": filepath.Join(dir, fmt.Sprintf("new%d.txt", n)), "content": strings.Repeat(fmt.Sprintf("line %d of a new file\n", n), 400)}))
	})
	for _, s := range sides {
		s.cpu = cpuTime(s.p.PID())
	}
	n := 0
	for b.Loop() {
		slices.Reverse(sides) // each goes first every other turn
		for _, s := range sides {
			t0 := time.Now()
			benchTurn(ctx, b, s.p, "EDIT "+strconv.Itoa(n))
			s.spent += time.Since(t0)
		}
		n++
	}
	for _, s := range sides {
		for _, f := range []string{"one.go", "two.go"} {
			if got, _ := os.ReadFile(filepath.Join(s.cwd(), f)); !strings.Contains(string(got), fmt.Sprintf("marker(%d)", n)) {
				b.Fatalf("%s: %s was not edited %d times", s.name, f, n)
			}
		}
		b.ReportMetric(float64(s.spent.Milliseconds())/float64(n), s.name+"-ms/turn")
		b.ReportMetric(float64((cpuTime(s.p.PID())-s.cpu).Milliseconds())/float64(n), s.name+"-cpu-ms/turn")
		b.ReportMetric(float64(dirBytes(filepath.Join(s.home, ".claude", "file-history")))/float64(n), s.name+"-disk-B/turn")
	}
}

// benchSide is one of BenchmarkE2ECheckpoints' two CLIs.
type benchSide struct {
	name  string
	home  string
	p     *claudeagent.Process
	spent time.Duration
	cpu   time.Duration // the CLI's CPU time before the turns
}

func (s *benchSide) cwd() string { return filepath.Join(s.home, "proj") }

// startSide starts a CLI, with file checkpoints or without, in a HOME of
// its own whose project holds two source files, and has it read them (the
// Edit tool edits only files read before).
func startSide(ctx context.Context, b *testing.B, srv *fakeapi.Server, bin string, checkpoints bool) *benchSide {
	home, env := e2eenv.Env(b, srv.URL())
	s := &benchSide{name: "plain", home: home}
	if checkpoints {
		s.name = "checkpoints"
	}
	if err := os.Mkdir(s.cwd(), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, f := range []string{"one.go", "two.go"} {
		if err := os.WriteFile(filepath.Join(s.cwd(), f), benchSource(f), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	opts := claudeagent.Options{Path: bin, Cwd: s.cwd(), Env: env, FileCheckpoints: checkpoints}
	opts.PermissionMode = "acceptEdits"
	p, err := claudeagent.Start(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	s.p = p
	srv.SetHandler(editingModel(map[string][]fakeapi.Block{"READ": {
		fakeapi.ToolUse("", "Read", map[string]any{"file_path": filepath.Join(s.cwd(), "one.go")}),
		fakeapi.ToolUse("", "Read", map[string]any{"file_path": filepath.Join(s.cwd(), "two.go")})}}))
	benchTurn(ctx, b, p, "READ")
	return s
}

// benchSource is a source file of about 40 KB with one marker(0) line.
func benchSource(name string) []byte {
	var sb strings.Builder
	sb.WriteString("package bench // " + name + "\n\nvar marker = marker(0)\n\n")
	for i := 0; sb.Len() < 40<<10; i++ {
		fmt.Fprintf(&sb, "func f%d(x int) int { return x*%d + %d }\n", i, i, i+1)
	}
	return []byte(sb.String())
}

// benchTurn runs one turn that must succeed.
func benchTurn(ctx context.Context, b *testing.B, p *claudeagent.Process, prompt string) {
	if err := p.SendUser(prompt); err != nil {
		b.Fatal(err)
	}
	for {
		m, err := p.Next(ctx)
		if err != nil {
			b.Fatalf("%s: %v (%s)", prompt, err, p.StderrTail())
		}
		if r, ok := m.(*claudeagent.ResultMessage); ok {
			if r.IsError || r.Result != "done" {
				b.Fatalf("%s: %s %q %s", prompt, r.Subtype, r.Result, r.ErrorText())
			}
			return
		}
	}
}

// cpuTime is the CPU time (user and system) process pid has used, from
// /proc (Linux; 0 elsewhere): on a loaded machine what a turn costs the
// CLI shows there better than in its wall time.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// After the command's name (in parentheses): state, then fields 4 on;
	// utime and stime are fields 14 and 15, in clock ticks (100 a second).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
