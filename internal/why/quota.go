package why

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// quotaUse is the namespace's ResourceQuotas, resource by resource.
func quotaUse(s *Snapshot, namespace string) []QuotaUse {
	var out []QuotaUse
	for i := range s.ResourceQuotas {
		q := &s.ResourceQuotas[i]
		if q.Namespace != namespace {
			continue
		}
		for _, name := range sortedResourceNames(q.Status.Hard) {
			used, hard := q.Status.Used[name], q.Status.Hard[name]
			out = append(out, QuotaUse{Quota: q.Name, Resource: string(name), Used: used.String(), Hard: hard.String()})
		}
	}
	return out
}

// quotaCause is the quota layer's context for a pod that exists (quota
// admitted it): use against hard, and the resources at their limit.
func quotaCause(uses []QuotaUse, namespace string) *Cause {
	if len(uses) == 0 {
		return nil
	}
	var quotas, full []string
	by := map[string][]string{}
	for _, u := range uses {
		if _, ok := by[u.Quota]; !ok {
			quotas = append(quotas, u.Quota)
		}
		by[u.Quota] = append(by[u.Quota], fmt.Sprintf("%s %s/%s", u.Resource, u.Used, u.Hard))
		used, hard := resource.MustParse(u.Used), resource.MustParse(u.Hard)
		if used.Cmp(hard) >= 0 {
			full = append(full, u.Resource)
		}
	}
	parts := make([]string, len(quotas))
	for i, q := range quotas {
		parts[i] = fmt.Sprintf("ResourceQuota %s: %s", q, strings.Join(by[q], ", "))
	}
	msg := fmt.Sprintf("namespace %s: %s (the quota admitted this pod, so it does not hold it Pending)", namespace, strings.Join(parts, "; "))
	if len(full) > 0 {
		msg += fmt.Sprintf("; at the limit: %s, so a new pod asking for it is refused at creation", strings.Join(full, ", "))
	}
	return &Cause{Layer: LayerQuota, Code: CauseQuota, Problem: problem.Problem{Message: msg}}
}

var exceededQuota = regexp.MustCompile(`exceeded quota: ([^,]+), requested: (.*), used: (.*), limited: (.*)$`)

// quotaRefusal is a parsed "exceeded quota" message of the ResourceQuota
// admission plugin.
type quotaRefusal struct {
	quota                    string
	requested, used, limited map[string]string
	resources                []string
}

func parseQuotaRefusal(msg string) *quotaRefusal {
	m := exceededQuota.FindStringSubmatch(strings.TrimSpace(msg))
	if m == nil {
		return nil
	}
	r := &quotaRefusal{quota: m[1], requested: pairs(m[2]), used: pairs(m[3]), limited: pairs(m[4])}
	for _, kv := range strings.Split(m[2], ",") {
		if k, _, ok := strings.Cut(kv, "="); ok {
			r.resources = append(r.resources, k)
		}
	}
	return r
}

func pairs(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// String is "requests.nvidia.com/gpu requested 1, used 2 of 2".
func (r *quotaRefusal) String() string {
	var parts []string
	for _, k := range r.resources {
		parts = append(parts, fmt.Sprintf("%s requested %s, used %s of %s", k, r.requested[k], r.used[k], r.limited[k]))
	}
	return strings.Join(parts, "; ")
}

// blueprintQuotaField maps a quota resource to the blueprint's team quota
// field that sets it.
func blueprintQuotaField(res string) string {
	switch {
	case res == string(corev1.ResourceRequestsCPU) || res == string(corev1.ResourceCPU):
		return "quota.cpu"
	case res == string(corev1.ResourceRequestsMemory) || res == string(corev1.ResourceMemory):
		return "quota.memory"
	case res == string(corev1.ResourcePods):
		return "quota.pods"
	case strings.HasPrefix(res, "requests.") && strings.Contains(res, "gpu"):
		return "quota.gpu"
	}
	return ""
}

// teamOf is the blueprint team that owns the namespace, or nil.
func teamOf(bp *v1alpha1.Blueprint, namespace string) *v1alpha1.Team {
	if bp == nil {
		return nil
	}
	for i := range bp.Spec.Teams {
		t := &bp.Spec.Teams[i]
		nss := t.Namespaces
		if len(nss) == 0 {
			nss = []string{t.Name}
		}
		if contains(nss, namespace) {
			return t
		}
	}
	return nil
}

// holders are the namespace's pods that count against a quota resource
// ("requests.nvidia.com/gpu" counts pods requesting nvidia.com/gpu).
func holders(s *Snapshot, namespace, res string) []string {
	name := corev1.ResourceName(strings.TrimPrefix(res, "requests."))
	var out []string
	for i := range s.Pods {
		p := &s.Pods[i]
		if p.Namespace != namespace || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if name != corev1.ResourcePods {
			q := podRequests(p)[name]
			if q.Sign() <= 0 {
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s (%s)", p.Name, p.Status.Phase))
	}
	return out
}
