package rehearse

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/rehearse/trace"
)

// DisruptionResult is one of the trace's interruptions as the rehearsal
// carried it out.
type DisruptionResult struct {
	// At is the trace time it was carried out.
	At   Duration `json:"at"`
	Pool string   `json:"pool"`
	// Nodes are the pool's nodes that got the notice: those up at At.
	// None when the pool had none.
	Nodes []string `json:"nodes"`
	// Notice is the pool's spot notice, in trace time.
	Notice Duration `json:"notice"`
	// Error is why it could not be carried out; empty when it was.
	Error string `json:"error,omitempty"`
}

// interrupt gives every node of the interruption's pool that is up now
// the pool's spot notice, through o.Interrupt, and says what it did. The
// notice is the compressed blueprint's, so it lasts its trace time.
func interrupt(ctx context.Context, o Options, in trace.Interruption) (time.Time, DisruptionResult) {
	res := DisruptionResult{Pool: in.Pool}
	var notice time.Duration
	for i := range o.Blueprint.Spec.Pools {
		if p := &o.Blueprint.Spec.Pools[i]; p.Name == in.Pool {
			notice = p.SpotNotice()
		}
	}
	res.Notice = Duration(time.Duration(float64(notice) * o.Speed))
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelPool: in.Pool}).String()
	list, err := o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
	now := time.Now()
	if err == nil && len(list.Items) > 0 {
		err = o.Interrupt(ctx, list.Items, notice)
	}
	if err != nil {
		res.Error = err.Error()
		return now, res
	}
	for _, n := range list.Items {
		res.Nodes = append(res.Nodes, n.Name)
	}
	return now, res
}

// interrupted notes an interruption carried out at now.
func (r *recorder) interrupted(now time.Time, d DisruptionResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d.At = Duration(r.clock.Trace(now))
	r.disruptions = append(r.disruptions, d)
}
