package rehearse

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
)

// The marker a rehearsal leaves in its cluster: the ConfigMap
// MarkerNamespace/MarkerName, whose MarkerStart is the moment of the
// clock at which the trace starts (RFC 3339). `berth record` beside a
// rehearsal reads it, so that its recording starts where the trace did
// and knows the cluster will go when the rehearsal ends.
const (
	MarkerNamespace = "kube-system"
	MarkerName      = "berth-rehearsal"
	MarkerStart     = "start"
)

// writeMarker leaves the marker of a trace that starts at start.
func writeMarker(ctx context.Context, c kubernetes.Interface, start time.Time) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: MarkerNamespace, Name: MarkerName},
		Data:       map[string]string{MarkerStart: start.UTC().Format(time.RFC3339)},
	}
	_, err := c.CoreV1().ConfigMaps(MarkerNamespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
	return err
}

// ReadMarker reads a rehearsal's marker: when its trace started on the
// cluster's clock. ok is false on a cluster that is not a rehearsal's.
func ReadMarker(ctx context.Context, c kubernetes.Interface) (start time.Time, ok bool, err error) {
	cm, err := c.CoreV1().ConfigMaps(MarkerNamespace).Get(ctx, MarkerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	start, err = time.Parse(time.RFC3339, cm.Data[MarkerStart])
	if err != nil {
		return time.Time{}, false, nil
	}
	return start, true, nil
}
