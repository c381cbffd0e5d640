package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/version"
)

// MaxKubeletSkew is how many minor versions a kubelet may lag its API
// server (the Kubernetes version skew policy); it may never lead it.
const MaxKubeletSkew = 3

// ControlPlaneVersion is the version of the control plane berth embeds
// ("v1.36.3"): the local cluster's, and the newest a blueprint may target.
func ControlPlaneVersion() string { return version.Kubernetes() }

// KubeletVersion is what the pool's nodes report as their kubelet
// version (status.nodeInfo.kubeletVersion): "v1.35.0" for "1.35", the
// embedded control plane's own release for its minor, "v1.35.2" for
// "1.35.2". An empty version means the embedded one.
func (p *Pool) KubeletVersion() string {
	cp := ControlPlaneVersion()
	if p.KubernetesVersion == "" {
		return cp
	}
	v := "v" + strings.TrimPrefix(p.KubernetesVersion, "v")
	if strings.Count(v, ".") == 2 {
		return v
	}
	if minor, ok := MinorOf(v); ok {
		if cpMinor, ok := MinorOf(cp); ok && cpMinor == minor {
			return cp
		}
	}
	return v + ".0"
}

// MinorOf is N of "1.N", "v1.N" or "1.N.P".
func MinorOf(v string) (int, bool) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || parts[0] != "1" {
		return 0, false
	}
	n, err := strconv.Atoi(parts[1])
	return n, err == nil
}

// validateVersions holds the blueprint and its pools to the version skew
// policy. The control plane is spec.kubernetesVersion on a cloud and the
// embedded one on the local cluster; a pool may lead neither, nor lag
// either by more than MaxKubeletSkew minors. A pool whose version is the
// spec's (its default) is checked through the spec's.
func validateVersions(spec *field.Path, s *Spec) (errs, warnings problem.List) {
	embedded := ControlPlaneVersion()
	local, ok := MinorOf(embedded)
	if !ok {
		return nil, nil // a build without a Kubernetes version; nothing to hold to
	}
	target := local
	if v := s.KubernetesVersion; kubernetesVersionRE.MatchString(v) {
		target, _ = MinorOf(v)
		vp := spec.Child("kubernetesVersion")
		switch {
		case target > local:
			errs = append(errs, invalid(vp, fmt.Sprintf("is newer than the control plane berth embeds (%s), so the local cluster cannot rehearse it", embedded), fmt.Sprintf("set it to \"1.%d\" or older, or use a berth built on Kubernetes 1.%d", local, target)))
		case local-target > MaxKubeletSkew:
			errs = append(errs, invalid(vp, fmt.Sprintf("is %d minor versions older than the control plane berth embeds (%s); the pools, which default to it, would break the version skew policy on the local cluster (a kubelet at most %d minors behind)", local-target, embedded, MaxKubeletSkew), fmt.Sprintf("set it to \"1.%d\" or newer", local-MaxKubeletSkew)))
		case target < local:
			warnings = append(warnings, warning(vp, fmt.Sprintf("the local cluster's control plane is %s, newer than the one this design targets: `berth up` rehearses on 1.%d", embedded, local), fmt.Sprintf("leave it, or set it to \"1.%d\" to target what berth rehearses", local)))
		}
	}
	newest, oldest := min(target, local), max(target, local)-MaxKubeletSkew
	for i := range s.Pools {
		p := &s.Pools[i]
		v := p.KubernetesVersion
		if v == "" || v == s.KubernetesVersion {
			continue
		}
		pp := spec.Child("pools").Index(i).Child("kubernetesVersion")
		if !kubernetesVersionRE.MatchString(v) {
			errs = append(errs, invalid(pp, "is not a Kubernetes version", "write the minor version in quotes, like \"1.36\", or leave it out for spec.kubernetesVersion"))
			continue
		}
		minor, _ := MinorOf(v)
		switch {
		case minor > newest:
			errs = append(errs, invalid(pp, fmt.Sprintf("is newer than the control plane (1.%d); the version skew policy never lets a kubelet lead its API server", newest), fmt.Sprintf("set it to \"1.%d\" or older; to upgrade, raise spec.kubernetesVersion (the control plane) first", newest)))
		case minor < oldest:
			errs = append(errs, invalid(pp, fmt.Sprintf("is %d minor versions older than the control plane (1.%d); the version skew policy allows a kubelet at most %d", oldest+MaxKubeletSkew-minor, oldest+MaxKubeletSkew, MaxKubeletSkew), fmt.Sprintf("set it to \"1.%d\" or newer; to upgrade an older pool, replace it one step at a time", oldest)))
		}
	}
	return errs, warnings
}
