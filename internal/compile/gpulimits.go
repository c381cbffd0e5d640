package compile

import (
	"fmt"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

// GPU limits: a container that asks for GPUs in resources.requests
// without a limit is refused by the API server's own validation ("Limit
// must be set for non overcommitable resources"), which runs after the
// mutating policies and before the validating ones, so a validating rule
// of berth's could never see it. The class policies make it reachable (they
// match such an object whatever its class): they complete the limit from the request, which makes the
// object valid, and mark it with AnnotationGPULimitMissing, on which the
// berth/gpu-limit rule refuses it with berth's message and fix. Under
// guardrails Warn or Audit the object is admitted with the limit it was
// missing, which is the one reading of a GPU request.

// gpuLimitSlots is how many containers (and init containers) of one pod
// the policy completes. Past them the API server's own message stands:
// the object is refused either way.
const gpuLimitSlots, gpuLimitInitSlots = 8, 4

// gpuLimits is the part of a target's mutating policy that completes GPU
// limits: match is a CEL condition, true when some container asks for
// GPUs in requests without a limit; parts are JSON patch lists, each
// empty unless it has something to complete. They ride in the class
// policy (classes.go): every policy that matches an object costs the API
// server a CEL view of it, and every mutation an encode and decode of it.
func gpuLimits(bp *v1alpha1.Blueprint, t mutationTarget) (match string, parts []string) {
	gpus := celList(gpuResources(bp))
	missing := func(c string) string {
		return "(has(" + c + ".resources) && has(" + c + ".resources.requests) && " + gpus + ".exists(r, r in " + c + ".resources.requests && !(has(" + c + ".resources.limits) && r in " + c + ".resources.limits)))"
	}
	containers := t.spec + ".containers"
	inits := "(has(" + t.spec + ".initContainers) ? " + t.spec + ".initContainers : [])"
	slot := func(list, path string, i int) {
		c := fmt.Sprintf("%s[%d]", list, i)
		p := fmt.Sprintf("%s/%s/%d/resources/limits", t.path, path, i)
		parts = append(parts, fmt.Sprintf("(size(%s) > %d && %s ? ((has(%s.resources.limits) ? [] : [JSONPatch{op: \"add\", path: %q, value: {}}]) + "+
			"%s.filter(r, r in %s.resources.requests && !(has(%s.resources.limits) && r in %s.resources.limits)).map(r, JSONPatch{op: \"add\", path: %q + jsonpatch.escapeKey(r), value: %s.resources.requests[r]})) : [])",
			list, i, missing(c), c, p, gpus, c, c, c, p+"/", c))
	}
	for i := range gpuLimitSlots {
		slot(containers, "containers", i)
	}
	for i := range gpuLimitInitSlots {
		slot(inits, "initContainers", i)
	}
	annotations := strings.TrimSuffix(t.labels, "labels") + "annotations"
	annotationsPath := strings.TrimSuffix(t.labelsPath, "labels") + "annotations"
	names := "(" + containers + " + " + inits + ").filter(c, " + missing("c") + ").map(c, c.name).join(', ')"
	parts = append(parts,
		"(!variables.gpuLimitMissing || has("+annotations+") ? [] : [JSONPatch{op: \"add\", path: \""+annotationsPath+"\", value: {}}])",
		"(!variables.gpuLimitMissing ? [] : [JSONPatch{op: \"add\", path: \""+annotationsPath+"/\" + jsonpatch.escapeKey(\""+AnnotationGPULimitMissing+"\"), value: "+names+"}])")
	return containers + ".exists(c, " + missing("c") + ") || " + inits + ".exists(c, " + missing("c") + ")", parts
}
