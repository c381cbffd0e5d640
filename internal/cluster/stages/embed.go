// Package stages holds the KWOK stages berth adds to KWOK's defaults, as
// data: how a simulated kubelet moves a pod whose containers have readiness
// probes from Pending to Running, and when it becomes Ready; which images
// it cannot pull; and how long a Job pod runs before it completes.
package stages

import (
	_ "embed"
)

// A Job pod annotated v1alpha1.AnnotationDuration runs that long (a Go
// duration: 90s, 10m, 1h30m) from its start until it completes. Without
// it, or with a value that is not such a duration, it completes as soon
// as it starts.

var (
	// PodReady is KWOK's fast pod-ready stage, narrowed to pods without
	// readiness probes.
	//go:embed pod-ready.yaml
	PodReady string

	// PodStartProbed starts a pod with readiness probes Running and unready.
	//go:embed pod-start-probed.yaml
	PodStartProbed string

	// PodProbeReady makes a probed pod Ready when its probes would first
	// succeed, and never when a probe cannot succeed.
	//go:embed pod-probe-ready.yaml
	PodProbeReady string

	// PodImagePullFailed keeps a pod whose image cannot be pulled (by
	// convention: tag 404, non-existent or nonexistent) Pending in
	// ImagePullBackOff.
	//go:embed pod-image-pull-failed.yaml
	PodImagePullFailed string

	// PodComplete is KWOK's fast pod-complete stage (a running Job pod
	// succeeds at once), narrowed to pods without v1alpha1.AnnotationDuration.
	//go:embed pod-complete.yaml
	PodComplete string

	// PodCompleteAfterDuration completes a running Job pod annotated
	// v1alpha1.AnnotationDuration when that duration has passed since its start.
	//go:embed pod-complete-after-duration.yaml
	PodCompleteAfterDuration string
)
