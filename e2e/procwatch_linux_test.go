//go:build linux

package e2e_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// The binary's names for its watchdog and for the marker on the processes
// it starts: package main's watchdogArg and ServerMarkerEnv
// (cmd/claude-agent-mcp), which this package cannot import. Should the
// binary's change alone, serverMarker finds no watchdog and
// TestE2EShareFencing no process of its session.
const (
	// watchdogArg, as the first argument, runs the binary as the watchdog.
	watchdogArg = "__watchdog"
	// serverMarkerEnv marks every process a server starts (the CLIs and,
	// through their environment, the tools they run).
	serverMarkerEnv = "CLAUDE_SUBAGENT_SERVER"
)

// serverMarker is the marker a server gives every process it starts
// (serverMarkerEnv), read from its watchdog's command line
// (`claude-agent-mcp __watchdog <marker>`), which starts before serving.
func serverMarker(t *testing.T, pid int) string {
	t.Helper()
	for _, p := range descendants(t, pid) {
		data, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00"); len(args) == 3 && args[1] == watchdogArg {
			return args[2]
		}
	}
	t.Fatalf("no watchdog below the server %d: its marker is unknown", pid)
	return ""
}

// procWatch samples /proc every 25 ms while a test runs and records every
// moment at which two claude processes of the watched servers (the
// processes carrying one of their markers) run one Claude conversation —
// the one their --resume or --session-id names. A process whose parent
// runs the same conversation is the CLI's own child (forked, not yet
// exec'd), not a second CLI.
type procWatch struct {
	markers map[string]string // marker → the server's name
	stop    chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	samples int
	last    time.Time                 // the last sample's start
	gap     time.Duration             // the longest time between two samples' starts
	twice   []string                  // each moment two ran one conversation
	seen    map[string][]procSighting // conversation → its processes, first seen first
}

// procSighting is a claude process of a watched server, and when the
// watch first saw it (monotonic).
type procSighting struct {
	pid    int
	server string
	first  time.Time
}

// watchProcs starts a procWatch of the servers with these markers (name →
// marker); stopped by the returned function, which reports the moments
// two processes ran one conversation as test errors (and at t's end).
func watchProcs(t *testing.T, servers map[string]string) *procWatch {
	t.Helper()
	w := newProcWatch(servers)
	go w.run()
	t.Cleanup(func() { w.check(t) })
	return w
}

func newProcWatch(servers map[string]string) *procWatch {
	w := &procWatch{markers: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{}), seen: map[string][]procSighting{}}
	for name, m := range servers {
		w.markers[m] = name
	}
	return w
}

func (w *procWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(25 * time.Millisecond) // foreign processes are seen only by looking again
	defer tick.Stop()
	for {
		w.sample()
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

// check stops the watch (once) and fails t for each moment two claude
// processes ran one conversation; it also fails t when the watch did not
// look at least 20 times (it would have checked nothing).
func (w *procWatch) check(t *testing.T) {
	t.Helper()
	select {
	case <-w.done:
		return // checked already
	default:
	}
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.twice {
		t.Errorf("two claude processes ran one conversation: %s", s)
	}
	if w.samples < 20 {
		t.Errorf("the process watch looked only %d times", w.samples)
	}
	t.Logf("the process watch looked %d times (at most %s apart); conversations seen: %d", w.samples, w.gap.Round(time.Millisecond), len(w.seen))
}

// sightings returns the processes seen running conversation csid.
func (w *procWatch) sightings(csid string) []procSighting {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen[csid])
}

// markedProc is a process of a watched server, as one sample saw it.
type markedProc struct {
	pid, ppid int
	server    string
	conv      string
	cmdline   string
}

func (w *procWatch) sample() {
	now := time.Now()
	entries, _ := os.ReadDir("/proc")
	byConv := map[string][]markedProc{}
	for _, e := range entries {
		if p, ok := w.marked(e.Name()); ok {
			byConv[p.conv] = append(byConv[p.conv], p)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	if !w.last.IsZero() {
		w.gap = max(w.gap, now.Sub(w.last))
	}
	w.last = now
	for conv, ps := range byConv {
		pids := map[int]bool{}
		for _, p := range ps {
			pids[p.pid] = true
		}
		var clis []string
		for _, p := range ps {
			if pids[p.ppid] {
				continue // the CLI's own child, before its exec
			}
			clis = append(clis, fmt.Sprintf("%d of %s (%s)", p.pid, p.server, p.cmdline))
			if !slices.ContainsFunc(w.seen[conv], func(s procSighting) bool { return s.pid == p.pid }) {
				w.seen[conv] = append(w.seen[conv], procSighting{pid: p.pid, server: p.server, first: now})
			}
		}
		if len(clis) > 1 {
			w.twice = append(w.twice, fmt.Sprintf("conversation %s: %s", conv, strings.Join(clis, "; ")))
		}
	}
}

// marked reads process name from /proc: a live process of a watched
// server whose command line names a conversation.
func (w *procWatch) marked(name string) (markedProc, bool) {
	pid, err := strconv.Atoi(name)
	if err != nil {
		return markedProc{}, false
	}
	cmdline, err := os.ReadFile("/proc/" + name + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte("--resume")) && !bytes.Contains(cmdline, []byte("--session-id")) {
		return markedProc{}, false
	}
	environ, err := os.ReadFile("/proc/" + name + "/environ")
	if err != nil {
		return markedProc{}, false
	}
	server := ""
	for _, kv := range strings.Split(string(environ), "\x00") {
		if m, ok := strings.CutPrefix(kv, serverMarkerEnv+"="); ok {
			server = w.markers[m]
		}
	}
	if server == "" {
		return markedProc{}, false
	}
	stat, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return markedProc{}, false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 || f[0] == "Z" {
		return markedProc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	conv := conversationOf(args)
	if conv == "" {
		return markedProc{}, false
	}
	return markedProc{pid: pid, ppid: ppid, server: server, conv: conv, cmdline: strings.Join(args, " ")}, true
}

// conversationOf is the Claude conversation a CLI's arguments run: the
// one --resume names, or with --fork-session (or without --resume) the
// one --session-id names.
func conversationOf(args []string) string {
	value := func(flag string) string {
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v
			}
			if a == flag && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	if r := value("--resume"); r != "" && !slices.Contains(args, "--fork-session") {
		return r
	}
	return value("--session-id")
}

// markedAlive lists the live processes carrying marker.
func markedAlive(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || procState(pid) == "Z" || procState(pid) == "" {
			continue
		}
		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if bytes.Contains(append([]byte{0}, environ...), []byte("\x00"+serverMarkerEnv+"="+marker+"\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// TestProcWatch: the watch sees two processes of watched servers running
// one conversation (whatever else they run), not a process and its own
// child, nor processes of a server it does not watch.
func TestProcWatch(t *testing.T) {
	t.Parallel()
	run := randomHex(t, 8) // this run's markers
	start := func(marker string, script string, args ...string) *exec.Cmd {
		cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...)
		cmd.Env = append(os.Environ(), serverMarkerEnv+"="+run+marker)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group: the subshell too
			_ = cmd.Wait()
		})
		return cmd
	}
	// sh keeps its arguments while it waits for sleep (no exec of the last
	// command: ":" follows it); a subshell is a fork of it, with them too.
	start("m-a", "sleep 30; :", "--session-id=conv-1")
	start("m-b", "sleep 30; :", "--resume=conv-1")
	start("m-c", "sleep 30; :", "--resume=conv-1") // a server not watched
	start("m-a", "sleep 30; :", "--resume=conv-2", "--fork-session", "--session-id=conv-3")
	start("m-b", "sleep 30; :", "--resume", "conv-2")
	parent := start("m-b", "(sleep 30; :) & wait", "--session-id=conv-4")
	testkit.Until(t, 10*time.Second, "the subshell", func() bool {
		for _, p := range descendants(t, parent.Process.Pid) {
			if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); strings.Contains(string(cmdline), "conv-4") {
				return true
			}
		}
		return false
	})
	w := newProcWatch(map[string]string{"A": run + "m-a", "B": run + "m-b"})
	w.sample()
	seen := map[string]int{}
	for _, c := range []string{"conv-1", "conv-2", "conv-3", "conv-4"} {
		seen[c] = len(w.sightings(c))
	}
	if want := map[string]int{"conv-1": 2, "conv-2": 1, "conv-3": 1, "conv-4": 1}; !maps.Equal(seen, want) {
		t.Errorf("processes seen by conversation: %v, want %v", seen, want)
	}
	if len(w.twice) != 1 || !strings.HasPrefix(w.twice[0], "conversation conv-1:") {
		t.Errorf("the watch saw two processes run one conversation at: %q, want conv-1 only", w.twice)
	}
}
