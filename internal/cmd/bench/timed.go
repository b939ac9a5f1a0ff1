package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The timed, interleaved part.

// variant is one timed step; setup and teardown around the timed part are
// the step's own business and leave the servers as they found them (a
// warm spare ready on the spares server).
type variant struct {
	key  string
	step func(ctx context.Context) (time.Duration, error)
}

// timeIt times f, and remembers when the timed part started and ended so
// that the API requests made during it can be found.
func (b *bench) timeIt(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	b.span = [2]time.Time{start, time.Now()}
	return b.span[1].Sub(start), err
}

// apiRecorder notes when each POST /v1/messages request reached the fake
// API (the handler runs as the request arrives; returning nil keeps the
// keyword replies).
type apiRecorder struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *apiRecorder) handle(*fakeapi.Request) *fakeapi.Reply {
	a.mu.Lock()
	a.times = append(a.times, time.Now())
	a.mu.Unlock()
	return nil
}

// within returns the first arrival in span and how many arrived in it.
func (a *apiRecorder) within(span [2]time.Time) (first time.Time, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.times {
		if !t.Before(span[0]) && !t.After(span[1]) {
			if n == 0 {
				first = t
			}
			n++
		}
	}
	return first, n
}

func (b *bench) timed(ctx context.Context) error {
	r := &rig{b: b}
	defer r.close()
	if err := r.start(ctx); err != nil {
		return err
	}
	variants := r.variants()
	if b.c.only != "" {
		keep := strings.Split(b.c.only, ",")
		variants = slices.DeleteFunc(variants, func(v variant) bool { return !slices.Contains(keep, v.key) })
		if len(variants) == 0 {
			return fmt.Errorf("-only %s: no such figure", b.c.only)
		}
	}
	bigRounds, err := b.rounds(ctx, variants)
	if err != nil {
		return err
	}
	if rss, err := readStatus(r.warm.pid()); err == nil {
		b.notes = append(b.notes, fmt.Sprintf("The spares server after the rounds (one session and the spare live; %d 2 MB answers behind it, warm-up included): VmRSS %s, VmHWM %s.",
			bigRounds, mib(rss["VmRSS"]), mib(rss["VmHWM"])))
	}
	if r.peer != nil {
		b.notes = append(b.notes, r.peerBigProbe(ctx))
	}
	return r.warm.closeSession(ctx, r.chat)
}

// peerBigProbe asks the peer for the 2 MB answer once, in a fresh
// session, for at most peerBigLimit, and says what happened.
func (r *rig) peerBigProbe(ctx context.Context) string {
	id, err := r.peer.create(ctx)
	if err != nil {
		return fmt.Sprintf("The TypeScript peer's 2 MB answer: creating its session failed: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, peerBigLimit)
	defer cancel()
	start := time.Now()
	res, err := r.peer.send(pctx, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "BIGTEXT"})
	took := time.Since(start)
	var out queryOut
	if err == nil {
		out, err = r.peer.queryOut("claude_chat_query", res)
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second) // a hung query may hold its close up too
	defer ccancel()
	_ = r.peer.closeSession(cctx, id)
	switch {
	case err != nil:
		return fmt.Sprintf("The TypeScript peer's 2 MB answer (one try, after the rounds): no answer within %s (%s).", peerBigLimit, cut(err.Error(), 120))
	case len(out.FinalText) < 2_000_000:
		return fmt.Sprintf("The TypeScript peer's 2 MB answer (one try, after the rounds): %d bytes after %s, want 2,000,000.", len(out.FinalText), ms(took))
	}
	return fmt.Sprintf("The TypeScript peer's 2 MB answer (one try, after the rounds): %d bytes in %s.", len(out.FinalText), ms(took))
}

// rounds runs a warm-up round and then b.c.rounds counted ones, each
// variant once a round, and returns how many 2 MB answers the spares
// server gave.
func (b *bench) rounds(ctx context.Context, variants []variant) (bigRounds int, err error) {
	for round := 0; round <= b.c.rounds; round++ {
		if round == 0 {
			logf("warm-up round")
		} else {
			logf("round %d/%d", round, b.c.rounds)
		}
		// A fresh order each round (seeded, so that runs are alike): no
		// figure always follows the same other one, nor always comes first.
		order := rand.New(rand.NewPCG(1, uint64(round))).Perm(len(variants))
		if round == 1 {
			clear(b.extra) // the warm-up round's
		}
		for _, i := range order {
			v := variants[i]
			if err := ctx.Err(); err != nil {
				return bigRounds, err
			}
			b.cliMs = -1
			d, err := v.step(ctx)
			if err != nil {
				return bigRounds, fmt.Errorf("round %d, %s: %w", round, v.key, err)
			}
			if v.key == "bigtext_server" {
				bigRounds++
			}
			if round > 0 {
				b.record(v.key, d)
			}
		}
	}
	return bigRounds, nil
}

// record keeps one counted sample of figure key, with the API requests
// made during it and the time outside the CLI's own duration_ms.
func (b *bench) record(key string, d time.Duration) {
	b.results[key] = append(b.results[key], d)
	first, n := b.apiLog.within(b.span)
	if n > 0 {
		b.toAPI[key] = append(b.toAPI[key], first.Sub(b.span[0]))
	}
	b.apiReqs[key] += n
	if b.cliMs >= 0 {
		b.outside[key] = append(b.outside[key], d-time.Duration(b.cliMs)*time.Millisecond)
	}
}

// checkCapped checks a BIGTEXT finalText: cut at --max-result-chars, with
// the marker naming the transcript.
func (b *bench) checkCapped(text string) error {
	if !strings.Contains(text, "truncated: showing") {
		return fmt.Errorf("BIGTEXT finalText of %d bytes has no truncation marker", len(text))
	}
	i := strings.Index(text, "\n\n[… truncated")
	if i > b.c.maxResult || i < b.c.maxResult-4 {
		return fmt.Errorf("BIGTEXT finalText cut at %d bytes, want %d (--max-result-chars)", i, b.c.maxResult)
	}
	b.bigInfo = fmt.Sprintf("finalText %d bytes: the first %d characters of the 2,000,000 and the marker %q",
		len(text), i, cut(text[i+2:], 60))
	return nil
}

// rig is what the variants run on: three servers and a CLI driven
// directly, with a warm session on the spares server.
type rig struct {
	b      *bench
	warm   *server // --warm-spares 1, --max-live 4: the defaults
	alt    *server // -alt-server: another spares server, timed in the same rounds
	altID  string  // a warm session on alt
	cold   *server // --warm-spares 0
	full   *server // --max-live 2, kept full
	ui     *server // --ui on: the 2 MB answer with and without a page (page.go)
	chat   string  // a warm session on warm
	direct *claudeagent.Process
	// spare is bigCLI's counterpart of the spares server's spare: a CLI
	// started and initialized one round before it serves a turn.
	spare  *claudeagent.Process
	peer   *server // the TypeScript peer, when b.c.peer names it
	peerID string  // a warm session on peer
}

// start starts the servers and the CLI, and waits for their spares.
func (r *rig) start(ctx context.Context) error {
	b := r.b
	logf("starting the servers (%s)", b.c.claude)
	var err error
	if r.warm, err = b.startServer(ctx, "spares", b.c.claude, nil); err != nil {
		return err
	}
	if b.c.altBin != "" {
		if err := r.startAlt(ctx); err != nil {
			return err
		}
	}
	if r.cold, err = b.startServer(ctx, "no-spares", b.c.claude, nil, "--warm-spares", "0"); err != nil {
		return err
	}
	// A server kept full (--max-live 2: one idle session and the spare), so
	// that a direct query that takes the spare starts no new one until it
	// is over: the same path as direct_spare without the refill competing
	// for the CPU.
	if r.full, err = b.startServer(ctx, "max-live-2", b.c.claude, nil, "--max-live", "2"); err != nil {
		return err
	}
	if r.ui, err = b.startServer(ctx, "ui", b.c.claude, nil, "--ui", "on"); err != nil {
		return err
	}
	for _, s := range []*server{r.warm, r.full, r.ui} {
		if err := s.log.waitSpares(ctx, 1); err != nil {
			return err
		}
	}
	if _, err := r.full.create(ctx); err != nil { // takes the spare; a new one starts in the free place
		return err
	}
	if err := r.full.log.waitSpares(ctx, 2); err != nil {
		return err
	}
	if err := r.afterSpare(ctx, func() (err error) { r.chat, err = r.warm.create(ctx); return err }); err != nil {
		return err
	}
	if r.direct, err = b.startCLI(ctx); err != nil || b.c.peer == "" {
		return err
	}
	logf("starting the TypeScript peer (%s)", b.c.peer)
	if r.peer, err = b.startPeer(ctx); err != nil {
		return err
	}
	r.peerID, err = r.peer.create(ctx)
	return err
}

// startAlt starts the -alt-server with -alt-args, waits for its spare and
// makes its warm chat session.
func (r *rig) startAlt(ctx context.Context) error {
	b := r.b
	bin := b.c.altBin
	if bin == "same" {
		bin = b.c.serverBin
	}
	logf("starting the alt server (%s %s)", bin, b.c.altArgs)
	var err error
	if r.alt, err = b.startServerBin(ctx, bin, "alt", b.c.claude, nil, strings.Fields(b.c.altArgs)...); err != nil {
		return err
	}
	if err := r.alt.log.waitSpares(ctx, 1); err != nil {
		return err
	}
	return r.afterSpareOn(ctx, r.alt, func() (err error) { r.altID, err = r.alt.create(ctx); return err })
}

// close stops what start started, in the reverse order.
func (r *rig) close() {
	for _, p := range []*claudeagent.Process{r.direct, r.spare} {
		if p != nil {
			p.Close()
		}
	}
	for _, s := range []*server{r.peer, r.ui, r.full, r.cold, r.alt, r.warm} {
		if s != nil {
			s.stop()
		}
	}
}

// afterSpare runs f, which takes the spares server's spare, then waits
// for the spare started behind it (untimed).
func (r *rig) afterSpare(ctx context.Context, f func() error) error {
	return r.afterSpareOn(ctx, r.warm, f)
}

// afterSpareOn is afterSpare on the server s.
func (r *rig) afterSpareOn(ctx context.Context, s *server, f func() error) error {
	n := s.log.sparesReady()
	if err := f(); err != nil {
		return err
	}
	return s.log.waitSpares(ctx, n+1)
}

// greeting checks the fake API's plain answer.
func greeting(what string) func(string) error {
	return func(text string) error { return wantHello(what, text) }
}

// serverTurn times one query on s and checks its final text.
func (r *rig) serverTurn(ctx context.Context, s *server, tool string, args map[string]any, check func(string) error) (time.Duration, error) {
	res, d, err := r.timedSend(ctx, s, tool, args)
	if err != nil {
		return d, err
	}
	out, err := s.queryOut(tool, res)
	if err == nil {
		r.b.cliMs, err = out.Metadata.DurationMs, check(out.FinalText)
	}
	return d, err
}

// timedSend is a round's timed part: a tool call on s (see send).
func (r *rig) timedSend(ctx context.Context, s *server, tool string, args map[string]any) (*mcp.CallToolResult, time.Duration, error) {
	var res *mcp.CallToolResult
	d, err := r.b.timeIt(func() (err error) {
		res, err = s.send(ctx, tool, args)
		return err
	})
	return res, d, err
}

// timedCreate times claude_session_create on s and checks its answer
// after the timer.
func (r *rig) timedCreate(ctx context.Context, s *server) (string, time.Duration, error) {
	return r.timedCreateWith(ctx, s, map[string]any{})
}

// timedCreateWith times a claude_session_create with args on s.
func (r *rig) timedCreateWith(ctx context.Context, s *server, args map[string]any) (string, time.Duration, error) {
	res, d, err := r.timedSend(ctx, s, "claude_session_create", args)
	if err != nil {
		return "", d, err
	}
	id, err := s.created(res)
	return id, d, err
}

// cliTurn times one turn of p.
func (r *rig) cliTurn(ctx context.Context, p *claudeagent.Process, prompt string) (*claudeagent.ResultMessage, time.Duration, error) {
	var res *claudeagent.ResultMessage
	d, err := r.b.timeIt(func() (err error) { res, err = cliTurn(ctx, p, prompt); return err })
	if err == nil {
		r.b.cliMs = res.DurationMs
	}
	return res, d, err
}

// freshSessionTurn times the first query of a session that took the spare,
// once the spare behind it is ready (nothing else starts meanwhile), and
// closes the session.
func (r *rig) freshSessionTurn(ctx context.Context, prompt string, check func(string) error) (time.Duration, error) {
	var id string
	if err := r.afterSpare(ctx, func() (err error) { id, err = r.warm.create(ctx); return err }); err != nil {
		return 0, err
	}
	d, err := r.serverTurn(ctx, r.warm, "claude_chat_query", map[string]any{"sessionId": id, "prompt": prompt}, check)
	if cerr := r.warm.closeSession(ctx, id); err == nil {
		err = cerr
	}
	return d, err
}

func (r *rig) variants() []variant {
	return append(append(r.serverVariants(), r.peerVariants()...), r.altVariants()...)
}

// peerVariants are the TypeScript peer's figures: a warm query and a
// one-shot query (it starts a CLI for each). Its 2 MB answer is a single
// probe after the rounds (peerBigProbe).
func (r *rig) peerVariants() []variant {
	if r.peer == nil {
		return nil
	}
	return []variant{
		{"chat_peer", func(ctx context.Context) (time.Duration, error) {
			return r.serverTurn(ctx, r.peer, "claude_chat_query", map[string]any{"sessionId": r.peerID, "prompt": "hi"}, greeting("the peer's claude_chat_query"))
		}},
		{"direct_peer", func(ctx context.Context) (time.Duration, error) {
			return r.serverTurn(ctx, r.peer, "claude_direct_query", map[string]any{"prompt": "hi"}, greeting("the peer's claude_direct_query"))
		}},
	}
}

// altVariants are the -alt-server's figures: the 2 MB turn and the warm
// chat query, as on the spares server.
func (r *rig) altVariants() []variant {
	if r.alt == nil {
		return nil
	}
	return []variant{
		{"bigtext_alt", func(ctx context.Context) (time.Duration, error) { return r.bigOn(ctx, r.alt) }},
		{"chat_alt", func(ctx context.Context) (time.Duration, error) { return r.chatOn(ctx, r.alt, r.altID) }},
	}
}

// serverVariants are the figures of this server and of the CLI alone.
func (r *rig) serverVariants() []variant {
	return []variant{
		{"chat_server", func(ctx context.Context) (time.Duration, error) { return r.chatOn(ctx, r.warm, r.chat) }},
		{"chat_cli", func(ctx context.Context) (time.Duration, error) {
			res, d, err := r.cliTurn(ctx, r.direct, "hi")
			if err == nil {
				err = wantHello("the CLI", res.Result)
			}
			return d, err
		}},
		{"direct_spare", func(ctx context.Context) (d time.Duration, err error) {
			err = r.afterSpare(ctx, func() (err error) {
				d, err = r.serverTurn(ctx, r.warm, "claude_direct_query", map[string]any{"prompt": "hi"}, greeting("claude_direct_query"))
				return err
			})
			return d, err
		}},
		{"direct_spare_norefill", r.directNoRefill},
		{"direct_nospare", func(ctx context.Context) (time.Duration, error) {
			return r.serverTurn(ctx, r.cold, "claude_direct_query", map[string]any{"prompt": "hi"}, greeting("claude_direct_query"))
		}},
		{"cold_p", func(ctx context.Context) (time.Duration, error) {
			return r.b.timeIt(func() error { return r.b.coldPrint(ctx) })
		}},
		{"create_spare", func(ctx context.Context) (d time.Duration, err error) {
			err = r.afterSpare(ctx, func() error {
				id, took, err := r.timedCreate(ctx, r.warm)
				d = took
				if err != nil {
					return err
				}
				return r.warm.closeSession(ctx, id)
			})
			return d, err
		}},
		{"create_spare_named", func(ctx context.Context) (d time.Duration, err error) {
			err = r.afterSpare(ctx, func() error {
				id, took, err := r.timedCreateWith(ctx, r.warm, map[string]any{"name": "bench"})
				d = took
				if err != nil {
					return err
				}
				return r.warm.closeSession(ctx, id)
			})
			return d, err
		}},
		{"create_nospare", func(ctx context.Context) (time.Duration, error) {
			id, d, err := r.timedCreate(ctx, r.cold)
			if err == nil {
				err = r.cold.closeSession(ctx, id)
			}
			return d, err
		}},
		{"first_turn_server", func(ctx context.Context) (time.Duration, error) {
			return r.freshSessionTurn(ctx, "hi", greeting("claude_chat_query"))
		}},
		{"first_turn_cli", r.firstTurnCLI},
		{"bigtext_server", r.bigServer},
		{"bigtext_cli", r.bigCLI},
		{"bigtext_cli_plain", r.bigCLIPlain},
		{"bigtext_ui", func(ctx context.Context) (time.Duration, error) { return r.bigOnUI(ctx, false) }},
		{"bigtext_page", func(ctx context.Context) (time.Duration, error) { return r.bigOnUI(ctx, true) }},
	}
}

// bigServer times a 2 MB answer as the second turn of a fresh session
// (it took the spare; its first turn, "hi", is untimed): a warm session,
// and no round carries the earlier rounds' 2 MB answers. What a spare's
// first turn costs is first_turn_server's business.
func (r *rig) bigServer(ctx context.Context) (time.Duration, error) { return r.bigOn(ctx, r.warm) }

// bigOn is bigServer's turn on the spares server srv.
func (r *rig) bigOn(ctx context.Context, srv *server) (time.Duration, error) {
	var id string
	if err := r.afterSpareOn(ctx, srv, func() (err error) { id, err = srv.create(ctx); return err }); err != nil {
		return 0, err
	}
	defer srv.closeSession(ctx, id)
	if _, err := srv.query(ctx, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "hi"}); err != nil {
		return 0, err
	}
	return r.serverTurn(ctx, srv, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "BIGTEXT"}, r.b.checkCapped)
}

// chatOn times the warm chat query "hi" on the session id of srv.
func (r *rig) chatOn(ctx context.Context, srv *server, id string) (time.Duration, error) {
	return r.serverTurn(ctx, srv, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "hi"}, greeting("claude_chat_query on the "+srv.name+" server"))
}

// bigCLI is bigServer's turn sent through claudeagent.Process, after an
// untimed "hi", to a CLI whose life matches the server session's: it was
// started one round earlier, like the spare that session took, and the
// next one is started behind it (untimed, awaited, like afterSpare's
// refill). Both CLIs have then idled as long and have a CLI that just
// started beside them: the CLI's own turn grows by tens of milliseconds
// when it has idled for a few seconds (its timers and heap settle), so a
// fresh CLI against a spare would compare CLIs, not the server.
func (r *rig) bigCLI(ctx context.Context) (time.Duration, error) {
	p := r.spare
	r.spare = nil
	if p == nil {
		var err error
		if p, err = r.b.startCLI(ctx); err != nil {
			return 0, err
		}
	}
	defer p.Close()
	next, err := r.b.startCLI(ctx)
	if err != nil {
		return 0, err
	}
	r.spare = next
	return r.bigTurn(ctx, p)
}

// directNoRefill is a direct query that takes the spare of the server
// kept full; the spare starts again once the query's session is gone.
func (r *rig) directNoRefill(ctx context.Context) (time.Duration, error) {
	n := r.full.log.sparesReady()
	d, err := r.serverTurn(ctx, r.full, "claude_direct_query", map[string]any{"prompt": "hi"}, greeting("claude_direct_query"))
	if err == nil {
		err = r.full.log.waitSpares(ctx, n+1)
	}
	return d, err
}

// firstTurnCLI is the first turn of a CLI started and initialized just
// before; it also measures how long the CLI takes to end after that turn
// (stdin EOF, then its exit): what a one-shot query waits for when it
// closes its session before answering.
func (r *rig) firstTurnCLI(ctx context.Context) (time.Duration, error) {
	p, err := r.b.startCLI(ctx)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	res, d, err := r.cliTurn(ctx, p, "hi")
	if err == nil {
		err = wantHello("the CLI", res.Result)
	}
	if err == nil {
		start := time.Now()
		if err = p.Close(); err == nil {
			err = p.Wait()
		}
		r.b.extra["cli_close"] = append(r.b.extra["cli_close"], time.Since(start))
	}
	return d, err
}

// bigCLIPlain is the 2 MB turn through a CLI started without
// --include-partial-messages (after an untimed "hi"): against bigtext_cli,
// what the flag costs the CLI itself.
func (r *rig) bigCLIPlain(ctx context.Context) (time.Duration, error) {
	p, err := r.b.startCLIWith(ctx, false)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	return r.bigTurn(ctx, p)
}

// bigTurn times the 2 MB turn of p after an untimed "hi".
func (r *rig) bigTurn(ctx context.Context, p *claudeagent.Process) (time.Duration, error) {
	if _, err := cliTurn(ctx, p, "hi"); err != nil {
		return 0, err
	}
	res, d, err := r.cliTurn(ctx, p, "BIGTEXT")
	if err == nil && len(res.Result) < 2_000_000 {
		err = fmt.Errorf("BIGTEXT through the CLI: %d bytes, want 2 MB", len(res.Result))
	}
	return d, err
}
