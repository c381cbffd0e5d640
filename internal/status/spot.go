package status

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/internal/spot"
)

// shownInterruptions is how many of the latest interruptions status
// lists.
const shownInterruptions = 5

func collectInterruptions(ctx context.Context, c kubernetes.Interface) ([]spot.Interruption, error) {
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, spot.RecordConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the spot interruptions: %w", err)
	}
	return spot.Read(cm)
}

func renderInterruptions(w io.Writer, list []spot.Interruption, now time.Time) error {
	if len(list) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nSPOT INTERRUPTIONS (%d in all; the latest %d)\n", len(list), min(len(list), shownInterruptions))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOOL\tZONE\tWHEN\tNOTICE\tPODS")
	for _, in := range list[max(0, len(list)-shownInterruptions):] {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ago\t%s\t%d\n", in.Node, in.Pool, in.Zone, ago(now, in.At.Time), in.Notice, in.Pods)
	}
	return tw.Flush()
}
