// Package stages holds the KWOK stages berth adds to KWOK's defaults, as
// data: how a simulated kubelet moves a pod whose containers have readiness
// probes from Pending to Running, and when it becomes Ready.
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
)
