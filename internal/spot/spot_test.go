package spot

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
)

func nodes(n int) []corev1.Node {
	var out []corev1.Node
	for i := range n {
		out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("spot-%d", i), Annotations: map[string]string{}}})
	}
	return out
}

func names(ns []corev1.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// A seeded pick repeats; it never picks a node already interrupted; a
// count of 0, or more than there are, takes them all.
func TestPick(t *testing.T) {
	all := nodes(8)
	a, b := names(Pick(nodes(8), 3, 42)), names(Pick(nodes(8), 3, 42))
	if len(a) != 3 || !cmp.Equal(a, b) {
		t.Errorf("seed 42 picked %v then %v; want the same 3 nodes", a, b)
	}
	all[0].Annotations[v1alpha1.AnnotationSpotInterruption] = time.Now().Format(time.RFC3339)
	for seed := uint64(1); seed < 50; seed++ {
		for _, n := range Pick(all, 2, seed) {
			if n.Name == "spot-0" {
				t.Fatalf("seed %d picked spot-0, which is being interrupted", seed)
			}
		}
	}
	if got := len(Pick(all, 0, 1)); got != 7 {
		t.Errorf("count 0 picked %d nodes; want the 7 not interrupted", got)
	}
}

// The times between random interruptions are exponential with the pool's
// mean, as between the events of a Poisson process.
func TestIntervalsHaveTheMean(t *testing.T) {
	s := &randomPool{rand: rand.New(rand.NewPCG(7, 9)), mean: time.Minute}
	var sum time.Duration
	const n = 20000
	short := 0
	for range n {
		d := s.interval()
		sum += d
		if d < time.Minute {
			short++
		}
	}
	if mean := sum / n; mean < 57*time.Second || mean > 63*time.Second {
		t.Errorf("mean interval %s; want about 1m", mean)
	}
	// P(X < mean) = 1 - 1/e ≈ 0.632 for an exponential distribution.
	if f := float64(short) / n; f < 0.61 || f > 0.65 {
		t.Errorf("%.3f of the intervals are shorter than the mean; want about 0.632", f)
	}
}

// A seeded schedule starts with the pool's first node, however long the
// pool was empty, and picks the same node whatever order the nodes are
// listed in.
func TestRandomScheduleRepeats(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	// run ticks every second for an hour from the first node, the pool
	// empty for idle before it, and lists the nodes in the order given.
	run := func(idle time.Duration, order func([]corev1.Node)) []string {
		s := &randomPool{seed: 42, mean: 5 * time.Minute}
		for at := start; at.Before(start.Add(idle)); at = at.Add(time.Second) {
			if got := s.due(nil, at); got != nil {
				t.Fatalf("an empty pool was interrupted: %v", names(got))
			}
		}
		var out []string
		for d := time.Duration(0); d < time.Hour; d += time.Second {
			ns := nodes(6)
			order(ns)
			for _, n := range s.due(ns, start.Add(idle+d)) {
				out = append(out, fmt.Sprintf("%s at %s", n.Name, d))
			}
		}
		return out
	}
	asListed := func([]corev1.Node) {}
	reversed := func(ns []corev1.Node) {
		for i, j := 0, len(ns)-1; i < j; i, j = i+1, j-1 {
			ns[i], ns[j] = ns[j], ns[i]
		}
	}
	want := run(0, asListed)
	if len(want) < 5 {
		t.Fatalf("%d interruptions in an hour at a mean of 5 minutes: %v", len(want), want)
	}
	if got := run(17*time.Second, reversed); !cmp.Equal(got, want) {
		t.Errorf("started 17 s later, nodes listed in reverse: %v\nwant %v", got, want)
	}
}

func TestDeadline(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		v1alpha1.AnnotationSpotInterruption: "2026-11-23T12:00:30Z", v1alpha1.AnnotationSpotNotice: "30s",
	}}}
	end, notice, ok := Deadline(n)
	if !ok || !end.Equal(time.Date(2026, 11, 23, 12, 0, 30, 0, time.UTC)) || notice != 30*time.Second {
		t.Errorf("Deadline = %v, %v, %v", end, notice, ok)
	}
	if _, _, ok := Deadline(&corev1.Node{}); ok {
		t.Error("a node without a notice has a deadline")
	}
}
