package status

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/words"
)

// Autoscaler is what the node autoscaler last published: berth's own on a
// local cluster, or a real cluster-autoscaler's status (without berth's
// record of each pool's last scale-up and scale-down).
type Autoscaler struct {
	// Updated is when it last wrote its status.
	Updated time.Time
	// Message is its cluster-wide note, such as why scale-down waits.
	Message string
	Pools   []castatus.PoolActivity
}

// collectAutoscaler reads the cluster-autoscaler-status ConfigMap; nil
// when there is none (no autoscaler runs, or it writes no status).
func collectAutoscaler(ctx context.Context, c kubernetes.Interface) (*Autoscaler, error) {
	cm, err := c.CoreV1().ConfigMaps(castatus.ConfigMapNamespace).Get(ctx, castatus.ConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the autoscaler's status: %w", err)
	}
	st, act, err := castatus.Read(cm)
	if err != nil {
		return nil, err
	}
	out := &Autoscaler{Message: st.Message}
	out.Updated, _ = time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", st.Time)
	if act != nil {
		out.Pools = act.Pools
		return out, nil
	}
	for _, g := range st.NodeGroups {
		p := castatus.PoolActivity{Name: g.Name, Ready: g.Health.NodeCounts.Registered.Ready, Upcoming: g.Health.NodeCounts.Unregistered}
		if h := g.Health; h.CloudProviderTarget != nil && h.MinSize != nil && h.MaxSize != nil {
			p.Target, p.Min, p.Max = *h.CloudProviderTarget, *h.MinSize, *h.MaxSize
		}
		out.Pools = append(out.Pools, p)
	}
	return out, nil
}

// renderAutoscaler prints each autoscaled pool's sizes, its last
// scale-up and scale-down with their reasons, and what keeps its
// unneeded nodes.
func renderAutoscaler(w io.Writer, a *Autoscaler, now time.Time) error {
	if a == nil {
		return nil
	}
	fmt.Fprintf(w, "\nAUTOSCALER (status written %s ago)", ago(now, a.Updated))
	if a.Message != "" {
		fmt.Fprintf(w, ": %s", a.Message)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tREADY/TARGET\tUPCOMING\tMIN-MAX\tLAST SCALE-UP\tLAST SCALE-DOWN")
	for _, p := range a.Pools {
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%d-%d\t%s\t%s\n", p.Name, p.Ready, p.Target, p.Upcoming, p.Min, p.Max,
			scaleEvent(p.LastScaleUp, now), scaleEvent(p.LastScaleDown, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range a.Pools {
		// Entries are "NODE: reason", the reason a problem as its
		// String writes it; nodes kept for the same reason (a pool at
		// its minimum) share a line.
		var reasons []string
		nodes := map[string][]string{}
		for _, b := range p.Blocked {
			node, reason, _ := strings.Cut(b, ": ")
			if _, ok := nodes[reason]; !ok {
				reasons = append(reasons, reason)
			}
			nodes[reason] = append(nodes[reason], node)
		}
		for _, r := range reasons {
			// A reason's fix is on a line of its own: it goes beneath,
			// indented.
			fmt.Fprintf(w, "  pool %s keeps %s: %s\n", p.Name, strings.Join(nodes[r], ", "), strings.ReplaceAll(r, "\n", "\n    "))
		}
	}
	return nil
}

func scaleEvent(e *castatus.Event, now time.Time) string {
	if e == nil {
		return "-"
	}
	return fmt.Sprintf("%d→%d %s ago: %s", e.From, e.To, ago(now, e.Time.Time), strings.ReplaceAll(words.Truncate(e.Reason, 120), "\t", " "))
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}
