package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// crashEnv makes the test binary the writer of TestCrashLosesOnlyInFlight.
const crashEnv = "RECSTORE_CRASH_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashWriter(path)
		return
	}
	os.Exit(m.Run())
}

// crashWriter creates sessions one after another, printing each id once
// its create has returned, until it is killed.
func crashWriter(path string) {
	ctx := context.Background()
	s, err := Open(ctx, path, Options{BackupEvery: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		id := fmt.Sprintf("w%06d", i)
		if err := s.Create(ctx, record(id), store.Quota{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(id)
	}
}

// TestCrashLosesOnlyInFlight: a process SIGKILLed while it writes loses
// at most the write in flight: every create it saw return is there at the
// next open, and the file passes its check. Meanwhile the test's own
// process writes to the same file: two processes share it.
func TestCrashLosesOnlyInFlight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for len(acked) < 10 && sc.Scan() {
		acked = append(acked, sc.Text())
	}
	// This process writes beside the other one meanwhile: two processes
	// share the file.
	here, err := Open(context.Background(), path, Options{BackupEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := here.Create(context.Background(), record(fmt.Sprintf("p%02d", i)), store.Quota{}); err != nil {
			t.Fatalf("a create beside the other process: %v", err)
		}
	}
	here.Close()
	for len(acked) < 40 && sc.Scan() {
		acked = append(acked, sc.Text())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // what it printed before it died was acknowledged too
		acked = append(acked, sc.Text())
	}
	_ = cmd.Wait()
	if len(acked) < 40 {
		t.Fatalf("the writer acknowledged only %d creates", len(acked))
	}
	if err := quickCheck(context.Background(), path); err != nil {
		t.Fatalf("the store after the crash: %v", err)
	}
	s := openAt(t, path, Options{})
	for _, id := range acked {
		if _, err := s.Get(context.Background(), id); err != nil {
			t.Fatalf("an acknowledged create is lost: %s: %v", id, err)
		}
	}
	for i := range 20 {
		acked = append(acked, fmt.Sprintf("p%02d", i))
	}
	n, _ := s.Count(context.Background(), "")
	if n > len(acked)+1 {
		t.Fatalf("%d records after the crash, %d acknowledged: more than the one in flight", n, len(acked))
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) > 0 {
		t.Fatalf("the store was taken for corrupt after a crash: %v", aside)
	}
}
