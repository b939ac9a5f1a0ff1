//go:build screenshots

package e2e_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// TestE2EDashboardScreenshot writes the README's docs/dashboard.png: the
// list of a real session's sub-agents (the real CLI, the fake API
// answering realistic prompts) — a README summarised, two reviewers fanned
// out and writing, one waiting for a permission answer, listed first. It
// is built only with -tags screenshots (scripts/screenshots, which sets
// SCREENSHOT_DIR to docs/): the suite does not need it.
func TestE2EDashboardScreenshot(t *testing.T) {
	dir := os.Getenv("SCREENSHOT_DIR")
	if dir == "" {
		t.Fatal("SCREENSHOT_DIR names no directory: run scripts/screenshots")
	}
	hang := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--ui", "on"}, elicit: hang})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	repo := shotRepo(t)
	e.api.SetHandler(shotReplies(repo))
	pages := dashboardPages(t, ctx, e, b)

	create := func(name string) string {
		_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": repo, "name": name, "model": "sonnet"}, nil)
		sid, _ := out["sessionId"].(string)
		if sid == "" {
			t.Fatalf("creating %s: %v", name, out)
		}
		return sid
	}
	summary := create("readme-summary")
	if _, out := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": summary, "prompt": "Summarize the README in five bullet points."}, nil); !strings.Contains(out["finalText"].(string), "sub-agents") {
		t.Fatalf("the summary: %v", out)
	}
	// The fan-out: two reviewers at once, each reading code, then writing.
	var running []string
	var dones []<-chan map[string]any
	for _, p := range [][2]string{
		{"review-discounts", "Review checkout/discount.go for bugs, most serious first."},
		{"test-gaps", "Which functions in checkout/ does no test call? Suggest a test for each."},
	} {
		sid := create(p[0])
		running = append(running, sid)
		dones = append(dones, queryInBackground(t, ctx, e, map[string]any{"sessionId": sid, "prompt": p[1]}))
	}
	// One that waits for a permission answer (the client never answers).
	asks := create("fix-tests")
	running = append(running, asks)
	dones = append(dones, queryInBackground(t, ctx, e, map[string]any{"sessionId": asks, "prompt": "Run the checkout tests and fix what fails."}))

	browse(t, b, 2*time.Minute, "the list with the fan-out writing and a question waiting", chromedp.Navigate(pages+"/"),
		pollJS(`document.title.startsWith('(1) Sessions') && document.querySelector('table.sessions tbody tr').dataset.session === `+jsString(asks)),
		pollJS(`[`+jsString(running[0])+`, `+jsString(running[1])+`].every(id => { const s = document.querySelector('tr[data-session="' + id + '"] .step'); return s !== null && s.textContent.includes('tool Read finished') })`))
	png := value(t, b, "the screenshot", chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, "dashboard.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, sid := range running {
		e.call(t, ctx, "claude_chat_interrupt", map[string]any{"sessionId": sid}, nil)
		<-dones[i]
	}
}

// shotRepo is a small repository for the screenshot's sessions to read.
func shotRepo(t *testing.T) string {
	root, err := os.MkdirTemp("", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	repo := filepath.Join(root, "shop")
	files := map[string]string{
		"README.md": "# shop\n\nA small web shop: catalogue, cart and checkout.\n",
		"checkout/discount.go": "package checkout\n\n// Apply returns the price after the code's discount.\n" +
			"func Apply(price int, code string) int {\n\tif code == \"WELCOME10\" {\n\t\treturn price * 90 / 100\n\t}\n\treturn price\n}\n",
		"checkout/discount_test.go": "package checkout\n\nimport \"testing\"\n\nfunc TestApply(t *testing.T) {\n\tif Apply(100, \"WELCOME10\") != 90 {\n\t\tt.Fatal(\"no discount\")\n\t}\n}\n",
	}
	for name, body := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// shotReplies answers the screenshot's prompts as a model would: a tool
// call first, then the answer (the reviewers' slowly, so that they are
// still writing when the screenshot is taken). Anything else gets the
// fake API's default reply.
func shotReplies(repo string) func(r *fakeapi.Request) *fakeapi.Reply {
	tool := func(name string, input map[string]any) *fakeapi.Reply {
		return &fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: name, Input: input}}}
	}
	slow := func(text string) *fakeapi.Reply {
		return &fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "text", Text: text}}, Deltas: 120, DeltaDelay: time.Second}
	}
	return func(r *fakeapi.Request) *fakeapi.Reply {
		if len(r.Tools) == 0 {
			return nil // the CLI's own side requests
		}
		after := len(r.LastToolResults()) > 0
		has := func(s string) bool { return bytes.Contains(r.Body, []byte(s)) }
		switch {
		case has("Summarize the README") && !after:
			return tool("Read", map[string]any{"file_path": filepath.Join(repo, "README.md")})
		case has("Summarize the README"):
			return fakeapi.TextReply(shotSummary)
		case has("Review checkout/discount.go") && !after:
			return tool("Read", map[string]any{"file_path": filepath.Join(repo, "checkout", "discount.go")})
		case has("Review checkout/discount.go"):
			return slow(shotReview)
		case has("does no test call") && !after:
			return tool("Read", map[string]any{"file_path": filepath.Join(repo, "checkout", "discount_test.go")})
		case has("does no test call"):
			return slow(shotGaps)
		case has("Run the checkout tests") && !after:
			return &fakeapi.Reply{Blocks: []fakeapi.Block{
				{Type: "text", Text: "I'll run the checkout tests first."},
				{Type: "tool_use", Name: "Bash", Input: map[string]any{"command": "go test ./checkout/...", "description": "Run the checkout tests"}},
			}}
		}
		return nil
	}
}

const shotSummary = `- A small web shop with three parts: catalogue, cart and checkout.
- Checkout applies discount codes (checkout/discount.go).
- Tests live beside the code.
- No setup beyond Go is described.
- Good first task for sub-agents: review checkout and find the untested code.`

const shotReview = `Reviewing checkout/discount.go, most serious first:

1. Apply rounds down with integer division: 10% off 999 gives 899, not 899.1 rounded. Decide on cents and round explicitly.
2. Discount codes are compared case-sensitively, so "welcome10" pays full price.
3. A code is never checked for expiry or single use.
4. Negative prices are accepted and discounted.`

const shotGaps = `Functions in checkout/ and the tests that call them:

- Apply: called by TestApply, but only with WELCOME10. No test for an unknown code, an empty code or a zero price.

Suggested tests:

1. TestApplyUnknownCode: Apply(100, "NOPE") == 100.
2. TestApplyRounding: Apply(999, "WELCOME10") == 899.
3. TestApplyZero: Apply(0, "WELCOME10") == 0.`
