package mcptools

import (
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestBurstGrace: after a client's call was answered with a task, its next
// calls within the burst window get the short grace; other clients, and
// calls after the window, get --task-after.
func TestBurstGrace(t *testing.T) {
	var b bursts
	t0 := time.Now()
	after := time.Second
	if g := b.grace("alice", after, t0); g != after {
		t.Errorf("a first call's grace = %v, want %v", g, after)
	}
	b.tasked("alice", t0)
	for _, tc := range []struct {
		scope string
		at    time.Duration
		want  time.Duration
	}{
		{"alice", 10 * time.Millisecond, burstGrace},
		{"alice", burstWindow, burstGrace},
		{"bob", 10 * time.Millisecond, after},
		{"alice", burstWindow + time.Millisecond, after},
	} {
		if g := b.grace(tc.scope, after, t0.Add(tc.at)); g != tc.want {
			t.Errorf("%s's call %v after alice's task: grace %v, want %v", tc.scope, tc.at, g, tc.want)
		}
	}
	b.end("alice")
	if g := b.grace("alice", after, t0.Add(10*time.Millisecond)); g != after {
		t.Errorf("after the burst ended, grace %v, want %v", g, after)
	}
	if g := (&bursts{}).grace("x", 100*time.Millisecond, t0); g != 100*time.Millisecond {
		t.Errorf("a --task-after below the burst grace is kept: %v", g)
	}
}

// TestFanOutBecomesTasks: four query calls in a row, as a host runs a
// model's fan-out: the first waits --task-after and becomes a task, the
// next three become tasks at once; a lone quick query still gets a plain
// result.
func TestFanOutBecomesTasks(t *testing.T) {
	const taskAfter = 3 * time.Second
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, Options{TaskAfter: taskAfter})
	dir := t.TempDir()
	var ids []string
	for i := range 4 {
		start := time.Now()
		res := c.tool("claude_direct_query", map[string]any{"prompt": "SLOW30", "cwd": dir})
		took := time.Since(start)
		id, _ := res["taskId"].(string)
		if id == "" {
			t.Fatalf("call %d: no task: %v", i, res)
		}
		ids = append(ids, id)
		if i == 0 && took < taskAfter {
			t.Errorf("the first call became a task after %v, before --task-after %v", took, taskAfter)
		}
		if i > 0 && took >= taskAfter {
			t.Errorf("call %d of the fan-out waited %v, the whole --task-after", i, took)
		}
	}
	for _, id := range ids {
		if st := c.result(c.call("tasks/get", map[string]any{"taskId": id})); st["status"] != taskWorking {
			t.Errorf("task %s: %v", id, st)
		}
	}
	// A tasks/cancel (TaskStop) is the model acting: the next call is no
	// part of a fan-out and waits --task-after again.
	c.result(c.call("tasks/cancel", map[string]any{"taskId": ids[0]}))
	start := time.Now()
	res := c.tool("claude_direct_query", map[string]any{"prompt": "SLOW30", "cwd": dir})
	if _, isTask := res["taskId"]; !isTask || time.Since(start) < taskAfter {
		t.Errorf("the call after a tasks/cancel: task %v after %v, want a task after --task-after %v", isTask, time.Since(start), taskAfter)
	}
	lone := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, Options{TaskAfter: taskAfter})
	res = lone.tool("claude_direct_query", map[string]any{"prompt": "hi", "cwd": dir})
	if _, isTask := res["taskId"]; isTask {
		t.Errorf("a lone quick query became a task: %v", res)
	}
}
