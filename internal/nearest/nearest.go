// Package nearest finds the known name nearest to a misspelt one, for the
// "did you mean" of an unknown flag, tool parameter or enumerated value:
// the one suggester the server uses.
package nearest

import "strings"

// Name returns the candidate nearest to name — within an edit distance of
// a third of name's length (at least 1, at most 3), the first of equals in
// candidates' order, or else the one candidate that begins with name —
// and "" when none is near.
func Name(name string, candidates []string) string {
	best, bestD := "", min(max(len(name)/3, 1), 3)+1
	var prefixed []string
	for _, c := range candidates {
		if d := Distance(name, c); d < bestD {
			best, bestD = c, d
		}
		if strings.HasPrefix(c, name) {
			prefixed = append(prefixed, c)
		}
	}
	if best == "" && len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// Distance is the edit distance of a and b in bytes, where an insertion, a
// deletion, a substitution or a swap of two neighbours (modle, model)
// counts one (the optimal string alignment distance).
func Distance(a, b string) int {
	prev2 := make([]int, len(b)+1) // row i-2
	prev := make([]int, len(b)+1)  // row i-1
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
