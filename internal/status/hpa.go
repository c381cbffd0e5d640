package status

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/internal/listing"
	"berth.io/berth/internal/status/hpastatus"
	"berth.io/berth/internal/words"
)

// Scaled is one workload an HPA scales, as the HPA controller last
// published it.
type Scaled struct {
	// Namespace and HPA name the HorizontalPodAutoscaler; Target its
	// scale target, "deployment/embed".
	Namespace, HPA, Target string
	Current, Desired       int32
	Min, Max               int32
	Metrics                []hpastatus.Metric
	// Limited is the ScalingLimited condition's reason when True
	// (TooManyReplicas, TooFewReplicas, ScaleUpLimit...); Inactive the
	// ScalingActive condition's reason when False (FailedGetExternalMetric,
	// ScalingDisabled...). Empty otherwise.
	Limited, Inactive string
	// LastRescale is its newest SuccessfulRescale event; nil when the
	// cluster keeps none.
	LastRescale *hpastatus.Rescale
}

// collectScaled lists HPAs and their events once each; nil when there
// are none or this user may not list them.
func collectScaled(ctx context.Context, c kubernetes.Interface, l listing.Lister) ([]Scaled, error) {
	hpas, err := c.AutoscalingV2().HorizontalPodAutoscalers("").List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing HorizontalPodAutoscalers: %w", err)
	}
	if len(hpas.Items) == 0 {
		return nil, nil
	}
	rescales := map[string]hpastatus.Rescale{}
	events, err := l.Events(ctx, "", metav1.ListOptions{FieldSelector: hpastatus.EventSelector})
	switch {
	case err == nil:
		rescales = hpastatus.LastRescales(events.Items)
	case !apierrors.IsForbidden(err):
		return nil, fmt.Errorf("listing the HorizontalPodAutoscalers' events: %w", err)
	}
	hpastatus.Sort(hpas.Items)
	out := make([]Scaled, 0, len(hpas.Items))
	for i := range hpas.Items {
		out = append(out, scaledFrom(&hpas.Items[i], rescales))
	}
	return out, nil
}

func scaledFrom(h *autoscalingv2.HorizontalPodAutoscaler, rescales map[string]hpastatus.Rescale) Scaled {
	s := Scaled{
		Namespace: h.Namespace, HPA: h.Name, Target: hpastatus.Target(h),
		Current: h.Status.CurrentReplicas, Desired: h.Status.DesiredReplicas,
		Min: hpastatus.MinReplicas(h), Max: h.Spec.MaxReplicas,
		Metrics: hpastatus.Metrics(h),
	}
	if c := hpastatus.Condition(h, autoscalingv2.ScalingLimited); c != nil && c.Status == "True" {
		s.Limited = c.Reason
	}
	if c := hpastatus.Condition(h, autoscalingv2.ScalingActive); c != nil && c.Status == "False" {
		s.Inactive = c.Reason
	}
	if r, ok := rescales[h.Namespace+"/"+h.Name]; ok {
		s.LastRescale = &r
	}
	return s
}

// renderScaled prints one row per HPA: its target's replicas against
// its range, each metric against its target, and its last rescale.
func renderScaled(w io.Writer, list []Scaled, now time.Time) error {
	if len(list) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nSCALED WORKLOADS (HorizontalPodAutoscalers)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tTARGET\tREPLICAS now/desired\tMIN-MAX\tMETRICS current/target\tLAST SCALE")
	for _, s := range list {
		target := s.Target
		if s.HPA != s.Target[strings.Index(s.Target, "/")+1:] {
			target += " (hpa " + s.HPA + ")"
		}
		replicas := fmt.Sprintf("%d/%d", s.Current, s.Desired)
		switch {
		case s.Inactive != "":
			replicas += " (" + s.Inactive + ")"
		case s.Limited == "TooManyReplicas" || (s.Current == s.Max && s.Limited != ""):
			replicas += " (at max)"
		}
		metrics := make([]string, len(s.Metrics))
		for i, m := range s.Metrics {
			metrics[i] = m.String()
		}
		if len(metrics) == 0 {
			metrics = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d-%d\t%s\t%s\n", s.Namespace, target, replicas, s.Min, s.Max,
			strings.Join(metrics, ", "), rescale(s.LastRescale, now))
	}
	return tw.Flush()
}

func rescale(r *hpastatus.Rescale, now time.Time) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%s ago: %s", ago(now, r.Time), words.Truncate(r.Message, 120))
}
