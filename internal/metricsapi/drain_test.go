package metricsapi

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTake(t *testing.T) {
	tests := []struct {
		name                 string
		depth                int64
		workers              int
		elapsed, item, carry time.Duration
		wantDepth            int64
		wantCarry            time.Duration
	}{
		{"one worker, whole items", 10, 1, 3 * time.Second, time.Second, 0, 7, 0},
		{"three workers take three times as many", 10, 3, 2 * time.Second, time.Second, 0, 4, 0},
		{"a part of an item carries over", 10, 1, 2500 * time.Millisecond, time.Second, 0, 8, 500 * time.Millisecond},
		{"the carry finishes an item", 10, 1, 600 * time.Millisecond, time.Second, 500 * time.Millisecond, 9, 100 * time.Millisecond},
		{"workers' parts add up", 10, 3, 500 * time.Millisecond, time.Second, 0, 9, 500 * time.Millisecond},
		{"never below zero", 5, 4, 10 * time.Second, time.Second, 0, 0, 0},
		{"an emptied queue carries nothing", 3, 1, 3500 * time.Millisecond, time.Second, 0, 0, 0},
		{"an empty queue stays empty", 0, 2, time.Second, time.Second, 300 * time.Millisecond, 0, 0},
		{"no workers, no change", 10, 0, time.Hour, time.Second, 200 * time.Millisecond, 10, 200 * time.Millisecond},
		{"no time, no change", 10, 4, 0, time.Second, 0, 10, 0},
		// A week at 1,000 workers, in nanoseconds, is past int64.
		{"no overflow", 1 << 62, 1000, 7 * 24 * time.Hour, time.Millisecond, 0, 1<<62 - 1000*7*24*3600*1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			depth, carry := take(tt.depth, tt.workers, tt.elapsed, tt.item, tt.carry)
			if depth != tt.wantDepth || carry != tt.wantCarry {
				t.Errorf("take(%d, %d workers, %s, item %s, carry %s) = %d, carry %s; want %d, carry %s",
					tt.depth, tt.workers, tt.elapsed, tt.item, tt.carry, depth, carry, tt.wantDepth, tt.wantCarry)
			}
		})
	}
}

// Many short looks at the queue take what one long look takes: the parts
// of items carry over, and nothing is lost to rounding.
func TestDrainNoDrift(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	one := &drain{at: start, depth: 1000, workers: 3, itemTime: 7 * time.Second}
	one.advance("q", nil, start.Add(time.Minute))
	many := &drain{at: start, depth: 1000, workers: 3, itemTime: 7 * time.Second}
	for at := 1300 * time.Millisecond; ; at += 1300 * time.Millisecond {
		many.advance("q", nil, start.Add(min(at, time.Minute)))
		if at >= time.Minute {
			break
		}
	}
	// 3 workers × 60 s / 7 s = 25.7 items.
	if one.depth != 975 || many.depth != one.depth || many.carry != one.carry {
		t.Errorf("a minute in one look: %d left, carry %s; in looks of 1.3 s: %d left, carry %s; want 975 both, the same carry",
			one.depth, one.carry, many.depth, many.carry)
	}
}

// Under a playback, item times are in the profile's time, and a step the
// queue passes sets its depth anew.
func TestDrainUnderPlayback(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	p := &Playback{Started: metav1.NewTime(start), Speed: 60, Profile: Profile{Steps: []Step{
		{At: metav1.Duration{}, Queues: map[string]int64{"q": 100}},
		{At: metav1.Duration{Duration: 10 * time.Minute}, Queues: map[string]int64{"q": 50, "other": 7}},
	}}}
	d := &drain{at: start, depth: 100, workers: 2, itemTime: 30 * time.Second}
	// Half a second of wall time is 30 s of profile time: an item each.
	d.advance("q", p, start.Add(500*time.Millisecond))
	if d.depth != 98 {
		t.Errorf("2 workers, 30 s items, 0.5 s at speed 60: %d left; want 98", d.depth)
	}
	// Two workers finish an item every 15 s between them: a quarter of a
	// second of wall time.
	if n := d.next(p); n != 250*time.Millisecond {
		t.Errorf("next item in %s of wall time; want 250ms", n)
	}
	// The step at 10 min (10 s of wall time) sets 50; from there 2 s of
	// wall time, 2 min of profile time, is 8 items.
	d.advance("q", p, start.Add(12*time.Second))
	if d.depth != 42 {
		t.Errorf("after the step to 50 and 2 min more: %d left; want 42", d.depth)
	}
}

func TestLoadAtFolded(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	l := &Load{Queues: map[string]int64{"q": 3}, Playback: &Playback{Started: metav1.NewTime(start), Speed: 1, Profile: Profile{Steps: []Step{
		{At: metav1.Duration{}, Queues: map[string]int64{"q": 100}},
		{At: metav1.Duration{Duration: time.Minute}, Queues: map[string]int64{"q": 50}},
	}}}}
	now := start.Add(10 * time.Second)
	if d := l.At(now).Queues["q"]; d != 100 {
		t.Fatalf("the first step reached: depth %d; want its 100", d)
	}
	folded := l.fold(now, map[string]int64{"q": 90})
	if d := folded.At(now).Queues["q"]; d != 90 || folded.Playback.Folded != 1 {
		t.Errorf("folded at 10 s: depth %d, %d step(s) folded; want 90 and 1 (the step is not set again)", folded.At(now).Queues["q"], folded.Playback.Folded)
	}
	if d := folded.At(start.Add(time.Minute)).Queues["q"]; d != 50 {
		t.Errorf("the next step reached after the fold: depth %d; want its 50", d)
	}
	if l.Playback.Folded != 0 || l.Queues["q"] != 3 {
		t.Error("fold changed the load it was given")
	}
}
