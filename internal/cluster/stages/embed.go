// Package stages holds the KWOK stages berth adds to KWOK's defaults, as
// data: how a simulated kubelet moves a pod whose containers have readiness
// probes from Pending to Running, and when it becomes Ready; and which images
// it cannot pull.
package stages

import (
	_ "embed"
)

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
)
