package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Three seeds of two designs: the page draws each replication of each
// design as a dot on the wait chart (3 seeds × 2 designs), and marks B's
// verdict on the wait, lower on every seed, as better.
func TestFiguresPageDrawsReplicationsAndMarksVerdicts(t *testing.T) {
	var a, b []*Report
	for i, w := range []time.Duration{100, 120, 110} {
		ra, rb := waited(int64(i+1), w*time.Second), waited(int64(i+1), (w-20)*time.Second)
		for _, r := range []*Report{ra, rb} {
			r.Groups[0].WaitP95 = r.Groups[0].WaitP50
		}
		a, b = append(a, ra), append(b, rb)
	}
	dir := t.TempDir()
	if err := WriteFiguresPage(dir, [][]*Report{a, b}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FiguresPage))
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	waits := page[strings.Index(page, "Wait, p95"):]
	waits = waits[:strings.Index(waits, "</svg>")]
	if n := strings.Count(waits, `class="replication"`); n != 6 {
		t.Errorf("the wait chart draws %d replications; want 6 (3 seeds, 2 designs)", n)
	}
	if !strings.Contains(page, `<td>team-a/training wait p50</td>`) || !strings.Contains(page, `<td class="better">B better</td>`) {
		t.Errorf("the page does not mark B better on the wait:\n%s", page)
	}
}
