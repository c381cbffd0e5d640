package why

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"berth.io/berth/internal/words"
)

var layerTitles = map[string]string{
	LayerPod:        "Pod",
	LayerWorkload:   "Workload",
	LayerHPA:        "HorizontalPodAutoscaler",
	LayerScheduler:  "Scheduler",
	LayerVolumes:    "Volumes",
	LayerPools:      "Pools",
	LayerLimitRange: "LimitRange",
	LayerQuota:      "Quota",
	LayerPriority:   "Priority",
	LayerAutoscale:  "Autoscale",
}

// maxReasons is how many reasons a pool shows in text.
const maxReasons = 4

// Render writes the verdict for people: the verdict and its fix first,
// then each layer.
func Render(w io.Writer, v *Verdict) error {
	var b strings.Builder
	switch {
	case v.Pod != "":
		fmt.Fprintf(&b, "Pod %s is %s", v.Pod, v.Phase)
		if v.Workload != "" {
			fmt.Fprintf(&b, " (%s)", v.Workload)
		}
	default:
		fmt.Fprintf(&b, "Workload %s has no Pending pod", v.Workload)
	}
	fmt.Fprintf(&b, "\n\nVerdict: %s\n  cause: %s\n", v.Top.Message, v.Top.Code)
	if v.Top.Fix != "" {
		fmt.Fprintf(&b, "  fix:   %s\n", v.Top.Fix)
	}
	byLayer := map[string][]Cause{}
	for _, c := range v.Causes {
		byLayer[c.Layer] = append(byLayer[c.Layer], c)
	}
	for _, layer := range layerOrder {
		switch {
		case layer == LayerScheduler && v.Scheduler != nil:
			section(&b, layer)
			renderScheduler(&b, v.Scheduler)
			causes(&b, byLayer[layer])
		case layer == LayerPools && len(v.Pools) > 0:
			section(&b, layer)
			if err := renderPools(&b, v.Pools); err != nil {
				return err
			}
			causes(&b, byLayer[layer])
		case layer == LayerQuota && len(v.Quota) > 0 && len(byLayer[layer]) == 0:
			section(&b, layer)
			renderQuota(&b, v.Quota)
		case len(byLayer[layer]) > 0:
			section(&b, layer)
			causes(&b, byLayer[layer])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func section(b *strings.Builder, layer string) { fmt.Fprintf(b, "\n%s\n", layerTitles[layer]) }

func causes(b *strings.Builder, cs []Cause) {
	for _, c := range cs {
		fmt.Fprintf(b, "  - %s\n", c.Message)
		if c.Fix != "" {
			fmt.Fprintf(b, "    fix: %s\n", c.Fix)
		}
	}
}

func renderScheduler(b *strings.Builder, s *SchedulerAccount) {
	if s.Reason != "" || s.Message != "" {
		fmt.Fprintf(b, "  PodScheduled=False %s: %s\n", s.Reason, s.Message)
	}
	for _, e := range s.Events {
		when := ""
		if e.Age != "" {
			when = ", " + e.Age + " ago"
		}
		fmt.Fprintf(b, "  event %s (x%d%s): %s\n", e.Reason, e.Count, when, e.Message)
	}
}

func renderPools(b *strings.Builder, pools []PoolFit) error {
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  POOL\tNODES\tFITS\tSIZE\tWHY NOT")
	for _, p := range pools {
		size := p.Size
		if size == "" {
			size = "-"
		}
		rs := p.Reasons
		if len(rs) == 0 {
			rs = []string{"-"}
		}
		if len(rs) > maxReasons {
			rs = append(rs[:maxReasons:maxReasons], fmt.Sprintf("(%d more)", len(p.Reasons)-maxReasons))
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\n", p.Name, p.Nodes, p.Fits, size, rs[0])
		for _, r := range rs[1:] {
			fmt.Fprintf(tw, "  \t\t\t\t%s\n", r)
		}
	}
	return tw.Flush()
}

func renderQuota(b *strings.Builder, qs []QuotaUse) {
	for _, q := range qs {
		fmt.Fprintf(b, "  - ResourceQuota %s: %s %s/%s\n", q.Quota, q.Resource, q.Used, q.Hard)
	}
}

// RenderSummary writes one line per Pending pod and per workload that
// cannot create its pods.
func RenderSummary(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(s.Pods) == 0 {
		fmt.Fprintln(tw, "No Pending pods.")
	} else {
		fmt.Fprintln(tw, "POD\tCAUSE\tWHY")
		for _, v := range s.Pods {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Pod, v.Top.Code, short(v.Top.Message))
		}
	}
	if len(s.Workloads) > 0 {
		fmt.Fprintln(tw, "\nWORKLOAD\tCAUSE\tWHY")
		for _, v := range s.Workloads {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Workload, v.Top.Code, short(v.Top.Message))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(s.Pods) + len(s.Workloads); n > 0 {
		_, err := fmt.Fprintf(w, "\n`berth why POD -n NAMESPACE` (or `berth why deployment/NAME`) explains one in full.\n")
		return err
	}
	return nil
}

// short is a message's first clause, at most 140 characters.
func short(msg string) string {
	if i := strings.Index(msg, "; "); i > 0 {
		msg = msg[:i]
	}
	return words.Truncate(msg, 140)
}

// RenderJSON writes v indented, with a final newline.
func RenderJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
