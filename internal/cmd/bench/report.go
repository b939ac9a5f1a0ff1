package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The report, in Markdown.

// figures are the timed figures in the order the report lists them.
var figures = []struct{ key, what string }{
	{"chat_server", "warm `claude_chat_query` \"hi\" through the server"},
	{"chat_cli", "the same turn sent to the CLI through claudeagent.Process"},
	{"direct_spare", "`claude_direct_query` \"hi\" with a matching warm spare"},
	{"direct_spare_norefill", "`claude_direct_query` \"hi\" with a spare, no new spare starting meanwhile (`--max-live 2`, kept full)"},
	{"direct_nospare", "`claude_direct_query` \"hi\" without a spare (`--warm-spares 0`)"},
	{"cold_p", "cold `claude -p \"hi\"`"},
	{"first_turn_server", "first `claude_chat_query` \"hi\" of a session that took the spare (spare behind it ready)"},
	{"first_turn_cli", "first turn \"hi\" of a CLI just started and initialized through claudeagent.Process"},
	{"create_spare", "`claude_session_create` with a spare"},
	{"create_spare_named", "`claude_session_create` with a spare and a `name`"},
	{"create_nospare", "`claude_session_create` without a spare (`--warm-spares 0`)"},
	{"bigtext_server", "2 MB answer (BIGTEXT) through the server: the second turn of a session from the spare"},
	{"bigtext_alt", "the same 2 MB turn on the -alt-server, in the same rounds"},
	{"chat_alt", "the warm chat query on the -alt-server, in the same rounds"},
	{"bigtext_cli", "the same 2 MB turn through claudeagent.Process: the second turn of a CLI started a round earlier, a new one started behind it"},
	{"bigtext_cli_plain", "the 2 MB turn through a CLI without --include-partial-messages (a fresh CLI, after an untimed hi): what the flag costs the CLI itself"},
	{"bigtext_ui", "the 2 MB answer on a server with --ui on, no page open"},
	{"bigtext_page", "the same with a dashboard page following the session (its event stream read throughout)"},
	{"chat_peer", "warm `claude_chat_query` \"hi\" through the TypeScript peer"},
	{"direct_peer", "`claude_direct_query` \"hi\" through the TypeScript peer (a CLI started per query)"},
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// met says whether a target was met.
func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func (b *bench) p50(key string) time.Duration { return pct(b.results[key], 0.5) }

func (b *bench) report(w io.Writer, version string) {
	b.reportTimes(w, version)
	b.reportRatios(w)
	b.reportTargets(w)
	b.reportBreakdown(w)
	b.reportSamples(w)
}

// reportTimes is the table of p50 and p90 of each figure.
func (b *bench) reportTimes(w io.Writer, version string) {
	fmt.Fprintf(w, "### Real CLI %s, %d rounds (p50 / p90, nearest rank)\n\n", version, b.c.rounds)
	fmt.Fprintln(w, "| figure | p50 | p90 |")
	fmt.Fprintln(w, "| --- | ---: | ---: |")
	for _, n := range figures {
		if len(b.results[n.key]) == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s (`%s`) | %s | %s |\n", n.what, n.key, ms(b.p50(n.key)), ms(pct(b.results[n.key], 0.9)))
	}
}

// ratio is one of the report's ratios of p50s: what, the figure over the
// one it is compared with, and a target (0: none).
type ratio struct {
	what, a, b string
	target     float64
}

// judged is the target's two cells of a table for the value r: the
// target and whether r meets it ("—" and "" without one).
func (q ratio) judged(r float64) (target, ok string) {
	if q.target <= 0 {
		return "—", ""
	}
	return fmt.Sprintf("≤ %.2f", q.target), met(r <= q.target)
}

// ratios are the report's ratios, in its order.
var ratios = []ratio{
	{"warm chat query: server / CLI direct", "chat_server", "chat_cli", 1.1},
	{"direct query with a spare / cold `claude -p`", "direct_spare", "cold_p", 0.1},
	{"direct query without a spare / cold `claude -p`", "direct_nospare", "cold_p", 0},
	{"first turn: session from a spare / fresh CLI", "first_turn_server", "first_turn_cli", 0},
	{"direct query with a spare / first turn of a fresh CLI", "direct_spare", "first_turn_cli", 0},
	{"direct query with a spare: refill starting meanwhile / not", "direct_spare", "direct_spare_norefill", 0},
	{"create with a spare / create without", "create_spare", "create_nospare", 0},
	{"create with a spare: named / unnamed", "create_spare_named", "create_spare", 0},
	{"2 MB answer: server / CLI direct", "bigtext_server", "bigtext_cli", 1.2},
	{"2 MB answer: a page following / none", "bigtext_page", "bigtext_ui", 1.05},
	{"2 MB answer: -alt-server / server", "bigtext_alt", "bigtext_server", 0},
	{"warm chat query: -alt-server / server", "chat_alt", "chat_server", 0},
	{"2 MB answer, the CLI alone: with partial messages / without", "bigtext_cli", "bigtext_cli_plain", 0},
	{"warm chat query: TypeScript peer / CLI direct", "chat_peer", "chat_cli", 0},
	{"warm chat query: server / TypeScript peer", "chat_server", "chat_peer", 0},
	{"direct query: TypeScript peer / cold `claude -p`", "direct_peer", "cold_p", 0},
	{"direct query with a spare: server / TypeScript peer", "direct_spare", "direct_peer", 0},
}

// reportRatios is the table of ratios of p50s, some with a target.
func (b *bench) reportRatios(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| ratio of p50s | value | target | met |")
	fmt.Fprintln(w, "| --- | ---: | ---: | --- |")
	for _, q := range ratios {
		if len(b.results[q.a]) == 0 || len(b.results[q.b]) == 0 {
			continue
		}
		r := float64(b.p50(q.a)) / float64(b.p50(q.b))
		t, ok := q.judged(r)
		fmt.Fprintf(w, "| %s | %.3f | %s | %s |\n", q.what, r, t, ok)
	}
}

// reportTargets is the absolute targets, the RSS table and the notes.
func (b *bench) reportTargets(w io.Writer) {
	if len(b.results["create_spare"]) > 0 {
		cs := b.p50("create_spare")
		fmt.Fprintf(w, "\n`claude_session_create` with a spare: p50 %s, target ≤ 50 ms: %s.\n", ms(cs), met(cs <= 50*time.Millisecond))
	}
	if c := b.extra["cli_close"]; len(c) > 0 {
		fmt.Fprintf(w, "\nClosing a CLI after its first turn (claudeagent.Process.Close, then Wait; measured after `first_turn_cli`): p50 %s, p90 %s. A one-shot query answers before this: its CLI is stopped in the background.\n",
			ms(pct(c, 0.5)), ms(pct(c, 0.9)))
	}
	if b.bigInfo != "" {
		fmt.Fprintf(w, "\n2 MB answer through the server: %s.\n", b.bigInfo)
	}
	if len(b.rssRows) > 0 {
		fmt.Fprintln(w, "\n### Server RSS (--max-live 4; VmRSS at once after the last query, and after a 2 s settle)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| setting | VmRSS at once | VmRSS settled | RssAnon | RssFile | VmHWM |")
		fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: |")
		for _, r := range b.rssRows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r[:], " | "))
		}
		fmt.Fprintf(w, "\nRSS with 10 sessions on the real CLI: %s at once, %s settled, target ≤ 15 MiB: %s.\n",
			mib(b.rss10At), mib(b.rss10), met(max(b.rss10, b.rss10At) <= 15<<20))
	}
	if len(b.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range b.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

// reportBreakdown splits each figure at the first request to the fake API.
func (b *bench) reportBreakdown(w io.Writer) {
	fmt.Fprintln(w, "\nWhere the time goes: from the start of the timed part to the first request at the fake API, and the rest (the API's reply, the CLI's handling of it, and what follows):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| figure | to the API, p50 | rest, p50 of totals − p50 to the API | API requests per run | outside the CLI's own duration_ms, p50 |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
	for _, n := range figures {
		if len(b.toAPI[n.key]) == 0 {
			continue
		}
		to := pct(b.toAPI[n.key], 0.5)
		out := "—"
		if len(b.outside[n.key]) > 0 {
			out = ms(pct(b.outside[n.key], 0.5))
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %.1f | %s |\n", n.key, ms(to), ms(b.p50(n.key)-to), float64(b.apiReqs[n.key])/float64(len(b.results[n.key])), out)
	}
}

// reportSamples lists every sample.
func (b *bench) reportSamples(w io.Writer) {
	fmt.Fprintln(w, "\nRaw samples (ms, in round order):")
	fmt.Fprintln(w)
	for _, n := range figures {
		var s []string
		for _, d := range b.results[n.key] {
			s = append(s, strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64))
		}
		if len(s) > 0 {
			fmt.Fprintf(w, "- %s: %s\n", n.key, strings.Join(s, " "))
		}
	}
}
