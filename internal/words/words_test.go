package words

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 nodes", 1: "1 node", 2: "2 nodes", 12: "12 nodes"} {
		if got := Count(n, "node"); got != want {
			t.Errorf("Count(%d, node) = %q, want %q", n, got, want)
		}
	}
}

func TestPick(t *testing.T) {
	for n, want := range map[int]string{0: "are", 1: "is", 2: "are"} {
		if got := Pick(n, "is", "are"); got != want {
			t.Errorf("Pick(%d, is, are) = %q, want %q", n, got, want)
		}
	}
}

func TestList(t *testing.T) {
	for _, c := range []struct {
		names []string
		max   int
		want  string
	}{
		{nil, 3, ""},
		{[]string{"a"}, 3, "a"},
		{[]string{"a", "b", "c"}, 3, "a, b, c"},
		{[]string{"a", "b", "c", "d"}, 3, "a, b, c and 1 more"},
		{[]string{"a", "b", "c", "d", "e"}, 2, "a, b and 3 more"},
	} {
		if got := List(c.names, c.max); got != c.want {
			t.Errorf("List(%q, %d) = %q, want %q", c.names, c.max, got, c.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 10 * time.Second: "10s", 61 * time.Second: "1m1s", 90 * time.Second: "1m30s",
		10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m",
		25*time.Hour + time.Second: "25h0m1s", 1500 * time.Millisecond: "1.5s", -time.Hour: "-1h",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s     string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven long", 10, "eleven ..."},
		{strings.Repeat("x", 200), 120, strings.Repeat("x", 117) + "..."},
		// "é" is two bytes; a cut inside it moves back to its start.
		{"abcdé fin", 8, "abcd..."},
	} {
		got := Truncate(c.s, c.width)
		if got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.width, got, c.want)
		}
		if len(got) > c.width || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q: longer than the width or not UTF-8", c.s, c.width, got)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"pools", "pools", 0},
		{"pool", "pools", 1},
		{"NoSchedual", "NoSchedule", 2},
		{"kitten", "sitting", 3},
		{"Pools", "pools", 1},
	} {
		if got := EditDistance(c.a, c.b); got != c.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := EditDistance(c.b, c.a); got != c.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.b, c.a, got, c.want)
		}
	}
}
