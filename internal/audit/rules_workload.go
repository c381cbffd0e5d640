package audit

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/pools"
)

// checkWorkload runs the pod-template rules on one workload.
func (v *view) checkWorkload(w *workload) {
	spec, path := w.spec, w.path
	if v.system[w.obj.Namespace] {
		return
	}
	// berth/gpu-limit
	for _, c := range containers(spec) {
		for r := range c.c.Resources.Requests {
			if _, ok := c.c.Resources.Limits[r]; isGPUResource(r) && !ok {
				v.add(v1alpha1.RuleGPULimit, w.obj, fmt.Sprintf("%s.%s.resources.limits", path, c.field),
					fmt.Sprintf("container %s asks for %s in requests without a limit; a GPU is only honoured as a limit", c.c.Name, r),
					fmt.Sprintf("set resources.limits[%q] on container %s to the number of GPUs it uses", r, c.c.Name))
			}
		}
	}
	if w.obj.Kind != "DaemonSet" {
		// berth/gpu-toleration-without-gpu
		if !w.gpu {
			if i, ok := tolerates(spec, v.knownGPUTaints); ok {
				v.add(v1alpha1.RuleGPUWithoutGPU, w.obj, fmt.Sprintf("%s.tolerations[%d]", path, i),
					"tolerates the GPU pools' taint but no container asks for a GPU, so it can hold a GPU node without using it",
					`remove the toleration, or set resources.limits["nvidia.com/gpu"] on the container that uses the GPU`)
			} else if field, ok := v.selectsGPU(spec); ok {
				v.add(v1alpha1.RuleGPUWithoutGPU, w.obj, path+"."+field,
					"selects a GPU pool but no container asks for a GPU, so it can hold a GPU node without using it",
					`remove the node selector, or set resources.limits["nvidia.com/gpu"] on the container that uses the GPU`)
			}
		}
		// berth/system-pool
		for i := range spec.Tolerations {
			t := &spec.Tolerations[i]
			if t.ToleratesTaint(klog.Background(), &corev1.Taint{Key: v1alpha1.TaintCriticalAddonsOnly, Value: "true", Effect: corev1.TaintEffectNoSchedule}, false) {
				v.add(v1alpha1.RuleSystemPool, w.obj, fmt.Sprintf("%s.tolerations[%d]", path, i),
					fmt.Sprintf("namespace %s is not a system namespace, yet this tolerates CriticalAddonsOnly and can run on the system pool", w.obj.Namespace),
					"remove the toleration (one with no key tolerates every taint); cluster add-ons belong in kube-system or a system namespace")
				break
			}
		}
	}
	v.checkPriority(w)
	switch w.role() {
	case inference:
		v.checkInference(w)
	case training:
		v.checkTraining(w)
	}
	v.checkModelPull(w)
	v.checkSpotDisruption(w)
}

// selectsGPU reports whether the pod asks for a GPU pool: its node
// selection leaves it only GPU nodes of those audited, or, where those
// cannot say, it picks nodes by a GPU label or a GPU pool's name.
func (v *view) selectsGPU(spec *corev1.PodSpec) (string, bool) {
	if field, ok, known := v.selectsOnly(spec, v.gpuPools); known {
		return field, ok
	}
	if field, ok := selects(spec, gpuNodeLabels, nil); ok {
		return field, true
	}
	if len(v.gpuPools) > 0 {
		return selects(spec, pools.PoolLabels, v.gpuPools)
	}
	return "", false
}

type namedContainer struct {
	c     *corev1.Container
	field string // "containers[0]"
	init  bool
}

func containers(spec *corev1.PodSpec) []namedContainer {
	var out []namedContainer
	for i := range spec.InitContainers {
		out = append(out, namedContainer{&spec.InitContainers[i], fmt.Sprintf("initContainers[%d]", i), true})
	}
	for i := range spec.Containers {
		out = append(out, namedContainer{&spec.Containers[i], fmt.Sprintf("containers[%d]", i), false})
	}
	return out
}

// checkPriority: every pod has a PriorityClass, and training does not
// preempt.
func (v *view) checkPriority(w *workload) {
	if w.spec.PriorityClassName != "" || w.obj.Kind == "DaemonSet" {
		return
	}
	switch {
	case v.defaultPC == nil:
		v.add(v1alpha1.RulePriorityClassMissing, w.obj, w.path+".priorityClassName",
			"no priorityClassName, and no PriorityClass is the global default, so its pods run at priority 0 alongside everything else",
			"set spec.priorityClassName (with berth, label the workload berth.io/class=CLASS and its class's PriorityClass is set on admission)")
	case v.highDefault():
		v.add(v1alpha1.RulePriorityClassMissing, w.obj, w.path+".priorityClassName",
			fmt.Sprintf("no priorityClassName, so its pods run at the global default %s (value %d), a high priority they were never given on purpose", v.defaultPC.Name, v.defaultPC.Value),
			"set spec.priorityClassName to the class the workload belongs to")
	}
}

func (v *view) checkTraining(w *workload) {
	policy, from := v.preemption(w)
	if policy != corev1.PreemptNever && from != "" {
		v.add(v1alpha1.RuleTrainingPreemption, w.obj, w.path+".priorityClassName",
			fmt.Sprintf("training runs with preemptionPolicy %s (%s), so a queued run evicts lower-priority work instead of waiting", policy, from),
			"use a PriorityClass with preemptionPolicy: Never for training (berth: a class with preemption: Never)")
	}
	if v.onSpot(w) && !durable(w) {
		v.add(v1alpha1.RuleSpotCheckpoint, w.obj, w.path+".volumes",
			"training runs on a spot pool but mounts no durable volume to checkpoint to, so every interruption starts the run over",
			"mount a PersistentVolumeClaim (or an ephemeral volumeClaimTemplate, NFS or CSI volume) and checkpoint to it, or run on an on-demand pool")
	}
}

// preemption is the workload's effective preemption policy and what set
// it; from is "" when it cannot be known (a PriorityClass not audited).
func (v *view) preemption(w *workload) (corev1.PreemptionPolicy, string) {
	if p := w.spec.PreemptionPolicy; p != nil {
		return *p, "spec.preemptionPolicy"
	}
	name := w.spec.PriorityClassName
	if name == "" {
		if v.defaultPC == nil {
			return corev1.PreemptLowerPriority, "no PriorityClass, so the default"
		}
		name = v.defaultPC.Name
	}
	pc, ok := v.pcs[name]
	if !ok {
		return "", ""
	}
	if pc.PreemptionPolicy != nil {
		return *pc.PreemptionPolicy, "PriorityClass " + name
	}
	return corev1.PreemptLowerPriority, "PriorityClass " + name
}

// onSpot reports whether the pod tolerates a spot pool's taint or selects
// spot nodes (as selectsGPU selects GPU nodes).
func (v *view) onSpot(w *workload) bool {
	if _, ok := tolerates(w.spec, v.spotTaints); ok {
		return true
	}
	if _, ok, known := v.selectsOnly(w.spec, v.spotPools); known {
		return ok
	}
	for k, val := range spotLabels {
		if _, ok := selects(w.spec, []string{k}, map[string]bool{val: true, strings.ToLower(val): true}); ok {
			return true
		}
	}
	if len(v.spotPools) > 0 {
		_, ok := selects(w.spec, pools.PoolLabels, v.spotPools)
		return ok
	}
	return false
}

// durable reports whether the pod mounts a volume that outlives its node.
func durable(w *workload) bool {
	if w.claims {
		return true
	}
	for _, vol := range w.spec.Volumes {
		if vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil || vol.NFS != nil || vol.CSI != nil {
			return true
		}
	}
	return false
}

// downloads are commands that fetch a model at start-up.
var downloads = regexp.MustCompile(`\b(s3|gs|az|hf)://|\.blob\.core\.windows\.net|huggingface-cli\s+download|\bhf\s+download|aws\s+s3\s+(cp|sync)|gsutil\s+(-m\s+)?(cp|rsync)|gcloud\s+storage\s+cp|\bazcopy\b|\b(wget|curl)\b[^|;&]*\.(bin|safetensors|pt|pth|onnx|gguf|ckpt|h5)\b`)

// downloadWords are what each of downloads' alternatives contains: a
// word with none of them cannot match, and is not run through the
// regular expression (on 150,000 bare pods that was most of the rule).
var downloadWords = []string{"://", "blob.core.windows.net", "download", "aws", "gsutil", "gcloud", "azcopy", "wget", "curl"}

// findDownload is downloads.FindString.
func findDownload(word string) string {
	for _, w := range downloadWords {
		if strings.Contains(word, w) {
			return downloads.FindString(word)
		}
	}
	return ""
}

// hubModel is a serving flag naming a model by hub ID rather than by a
// path in a volume, which the server downloads at start-up.
var hubModel = regexp.MustCompile(`^--(model|model-id|model_id|model-name-or-path|model_name_or_path)(=|$)`)

// checkModelPull: the main containers do not download the model.
func (v *view) checkModelPull(w *workload) {
	for i := range w.spec.Containers {
		c := &w.spec.Containers[i]
		words := append(append([]string(nil), c.Command...), c.Args...)
		field, what := "", ""
		for j, word := range words {
			if m := findDownload(word); m != "" {
				field, what = wordField(c, j), strings.TrimSpace(m)
				break
			}
			val := ""
			if hubModel.MatchString(word) || (word == "serve" && j > 0 && strings.Contains(words[j-1], "vllm")) {
				if _, after, ok := strings.Cut(word, "="); ok {
					val = after
				} else if j+1 < len(words) {
					val = words[j+1]
				}
			}
			if val != "" && !strings.HasPrefix(val, "/") && !strings.HasPrefix(val, "-") && !strings.HasPrefix(val, "file://") && !strings.HasPrefix(val, "$") {
				field, what = wordField(c, j), word+" "+val
				break
			}
		}
		if field != "" {
			v.add(v1alpha1.RuleModelInMain, w.obj, fmt.Sprintf("%s.containers[%d].%s", w.path, i, field),
				fmt.Sprintf("container %s fetches the model itself (%s), so every restart downloads it again before serving", c.Name, what),
				"pull the model in an init container into a shared volume (emptyDir or a PVC) and point the server at the path")
		}
	}
}

// wordField is the field of the j-th word of command followed by args.
func wordField(c *corev1.Container, j int) string {
	if j < len(c.Command) {
		return fmt.Sprintf("command[%d]", j)
	}
	return fmt.Sprintf("args[%d]", j-len(c.Command))
}
