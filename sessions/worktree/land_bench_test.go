package worktree

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkLand times a land of a small repository (20 files, main checked
// out) whose worktree has one committed and one uncommitted change, the
// message given: by fast-forward and by squash. Making the worktree is
// not timed. BENCHMARKS.md has the figures.
func BenchmarkLand(b *testing.B) {
	for _, how := range []string{FastForward, Squash} {
		b.Run(how, func(b *testing.B) {
			repo := b.TempDir()
			g := func(dir string, args ...string) {
				if out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=u", "-c", "user.email=u@example.com"}, args...)...).CombinedOutput(); err != nil {
					b.Fatalf("git %v: %v %s", args, err, out)
				}
			}
			g(repo, "init", "-q", "-b", "main")
			for i := range 20 {
				write(b, filepath.Join(repo, fmt.Sprintf("f%02d.txt", i)), "line\n")
			}
			g(repo, "add", ".")
			g(repo, "commit", "-qm", "start")
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				w, err := Make(ctx, repo, fmt.Sprintf("b%d", i), allowAll)
				if err != nil {
					b.Fatal(err)
				}
				write(b, filepath.Join(w.Path, fmt.Sprintf("c%d.txt", i)), "committed\n")
				g(w.Path, "add", ".")
				g(w.Path, "commit", "-qm", "c")
				write(b, filepath.Join(w.Path, fmt.Sprintf("u%d.txt", i)), "uncommitted\n")
				b.StartTimer()
				if _, err := w.Land(ctx, LandOptions{How: how, Message: "m", Check: allowAll}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
