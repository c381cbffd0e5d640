// Package words is how berth writes counts, lists, durations and names
// for people: "3 nodes", "a, b and 4 more", 2h30m rather than 2h30m0s, a
// message cut to a column's width, and how far a misspelt name is from
// the one meant. It imports nothing of berth's.
package words

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Count is n and the noun, with an s when n is not 1: "1 node", "0 nodes",
// "3 nodes".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Pick is one when n is 1, else many: Pick(n, "is", "are").
func Pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// List joins names with commas, at most max of them, then says how many
// more there are: "a, b and 3 more".
func List(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:max], ", ") + " and " + strconv.Itoa(len(names)-max) + " more"
}

// Duration writes d as time.Duration's String does, without its trailing
// zero units: 2h30m, 10m, 1h, 42s, 0s (not 2h30m0s, 10m0s, 1h0m0s).
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Truncate cuts s to at most width bytes, the last three of them "...",
// when it is longer; it never cuts a character in two. width is at
// least 3.
func Truncate(s string, width int) string {
	if len(s) <= width {
		return s
	}
	cut := width - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// EditDistance is the Levenshtein distance between a and b, byte by
// byte: the fewest insertions, deletions and substitutions that make one
// the other. Callers that ignore case lower both first.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
