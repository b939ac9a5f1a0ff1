package e2e_test

import (
	"fmt"
	"html"
	"strings"
)

// traceSVG draws spans as a waterfall, each under its parent (depth
// first, by start), for docs/tracing.md: TestE2ETraceFanOut writes it
// when TRACE_SVG names a file.
func traceSVG(spans []otlpSpan, title string) []byte {
	kids := map[string][]otlpSpan{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.id] = true
	}
	var roots []otlpSpan
	for _, s := range spans {
		if ids[s.parent] {
			kids[s.parent] = append(kids[s.parent], s)
		} else {
			roots = append(roots, s)
		}
	}
	type row struct {
		s     otlpSpan
		depth int
	}
	var rows []row
	var walk func(ss []otlpSpan, depth int)
	walk = func(ss []otlpSpan, depth int) {
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				if ss[j].start < ss[i].start {
					ss[i], ss[j] = ss[j], ss[i]
				}
			}
		}
		for _, s := range ss {
			rows = append(rows, row{s, depth})
			walk(kids[s.id], depth+1)
		}
	}
	walk(roots, 0)
	if len(rows) == 0 {
		return nil
	}
	t0, t1 := rows[0].s.start, rows[0].s.end
	for _, r := range rows {
		t0, t1 = min(t0, r.s.start), max(t1, r.s.end)
	}
	const label, width, h = 330, 560, 22
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", label+width+70, len(rows)*h+40)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="8" y="16" fill="#444">%s: %.0f ms</text>`+"\n", html.EscapeString(title), float64(t1-t0)/1e6)
	for i, r := range rows {
		y := 28 + i*h
		x := label + int(float64(r.s.start-t0)/float64(t1-t0)*width)
		w := max(2, int(float64(r.s.end-r.s.start)/float64(t1-t0)*width))
		color := "#4a7bd0"
		if r.s.service != "claude-agent-mcp" {
			color = "#d08a4a"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#222">%s</text>`, 8+r.depth*14, y+14, html.EscapeString(r.s.name))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="2" fill="%s"/>`, x, y+3, w, h-8, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" font-size="10">%.0f ms</text>`+"\n", label+width+10, y+14, float64(r.s.end-r.s.start)/1e6)
	}
	fmt.Fprintf(&b, `<text x="8" y="%d" fill="#4a7bd0">■ claude-agent-mcp</text><text x="160" y="%d" fill="#d08a4a">■ claude-code (--trace-cli)</text>`+"\n</svg>\n", len(rows)*h+36, len(rows)*h+36)
	return []byte(b.String())
}
