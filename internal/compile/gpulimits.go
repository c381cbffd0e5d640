package compile

import (
	"strconv"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

// GPU limits: a container that asks for GPUs in resources.requests
// without a limit is refused by the API server's own validation ("Limit
// must be set for non overcommitable resources"), which runs after the
// mutating policies and before the validating ones, so a validating rule
// of berth's could never see it. The class policies make it reachable (they
// match such an object whatever its class): they complete the limit from the request, which makes the
// object valid, and mark it with v1alpha1.AnnotationGPULimitMissing, on which the
// berth/gpu-limit rule refuses it with berth's message and fix. Under
// guardrails Warn or Audit the object is admitted with the limit it was
// missing, which is the one reading of a GPU request.

// gpuLimitSlots is how many containers (and init containers) of one pod
// the policy completes. Past them the API server's own message stands:
// the object is refused either way.
const gpuLimitSlots, gpuLimitInitSlots = 16, 8

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
	// For each GPU resource and list of containers, one patch per
	// container that lacks the limit: the key added to its limits, or
	// the limits map made with it.
	for _, r := range gpuResources(bp) {
		for _, l := range []struct {
			list, path string
			slots      int
		}{{containers, "containers", gpuLimitSlots}, {inits, "initContainers", gpuLimitInitSlots}} {
			var idx []string
			for i := range l.slots {
				idx = append(idx, strconv.Itoa(i))
			}
			c, res := l.list+"[i]", strconv.Quote(r)
			path := strconv.Quote(t.path+"/"+l.path+"/") + " + string(i) + \"/resources/limits\""
			parts = append(parts, "["+strings.Join(idx, ", ")+"].filter(i, i < size("+l.list+") && has("+c+".resources) && has("+c+".resources.requests) && "+res+" in "+c+".resources.requests && !(has("+c+".resources.limits) && "+res+" in "+c+".resources.limits))"+
				".map(i, has("+c+".resources.limits) ? JSONPatch{op: \"add\", path: "+path+" + \"/\" + jsonpatch.escapeKey("+res+"), value: "+c+".resources.requests["+res+"]}"+
				" : JSONPatch{op: \"add\", path: "+path+", value: {"+res+": "+c+".resources.requests["+res+"]}})")
		}
	}
	annotations := strings.TrimSuffix(t.labels, "labels") + "annotations"
	annotationsPath := strings.TrimSuffix(t.labelsPath, "labels") + "annotations"
	names := "(" + containers + " + " + inits + ").filter(c, " + missing("c") + ").map(c, c.name).join(', ')"
	parts = append(parts,
		"(!variables.gpuLimitMissing || has("+annotations+") ? [] : [JSONPatch{op: \"add\", path: \""+annotationsPath+"\", value: {}}])",
		"(!variables.gpuLimitMissing ? [] : [JSONPatch{op: \"add\", path: \""+annotationsPath+"/\" + jsonpatch.escapeKey(\""+v1alpha1.AnnotationGPULimitMissing+"\"), value: "+names+"}])")
	return containers + ".exists(c, " + missing("c") + ") || " + inits + ".exists(c, " + missing("c") + ")", parts
}
