package audit

// Rule IDs. Those shared with the guardrails (internal/compile) mean the
// same thing there: a pod the admission policy refuses is the finding
// audit reports on a cluster that has no policies.
const (
	RuleGPULimit              = "berth/gpu-limit"
	RuleGPUWithoutGPU         = "berth/gpu-toleration-without-gpu"
	RuleSystemPool            = "berth/system-pool"
	RuleGPUPoolTaint          = "berth/gpu-pool-taint"
	RuleSystemPoolTaint       = "berth/system-pool-taint"
	RuleGPUQuotaMissing       = "berth/gpu-quota-missing"
	RuleGPUQuotaKey           = "berth/gpu-quota-key"
	RuleLimitRangeGPUDefault  = "berth/limitrange-gpu-default"
	RuleLimitRangeGPUMax      = "berth/limitrange-gpu-max"
	RuleLimitRangeMissing     = "berth/limitrange-missing"
	RuleInferencePDB          = "berth/inference-pdb"
	RulePDBBlocksDrain        = "berth/pdb-blocks-drain"
	RulePDBSpansWorkloads     = "berth/pdb-spans-workloads"
	RuleGuardrailsNotEnforced = "berth/guardrails-not-enforced"
	RuleInferenceSpread       = "berth/inference-spread"
	RuleZoneFailover          = "berth/zone-failover"
	RuleInferenceReplicas     = "berth/inference-replicas"
	RuleTrainingPreemption    = "berth/training-preemption"
	RulePriorityClassMissing  = "berth/priority-class-missing"
	RuleGlobalDefaultHigh     = "berth/priority-global-default"
	RuleDevicePlugin          = "berth/device-plugin-tolerations"
	RuleHPAScaleDown          = "berth/hpa-scale-down"
	RuleHPAClassWindow        = "berth/hpa-class-window"
	RuleQueueNeverZero        = "berth/queue-never-zero"
	RuleModelInMain           = "berth/model-pull-main-container"
	RuleModelUnpinned         = "berth/model-unpinned"
	RuleSpotCheckpoint        = "berth/spot-checkpoint"
	RuleSpotDisruption        = "berth/spot-disruption-policy"
	RuleDrift                 = "berth/drift"
)

// Rules is the catalogue, in the order the README lists it.
var Rules = []Rule{
	{ID: RuleGPULimit, Severity: Error,
		Title: "GPU container without an nvidia.com/gpu limit",
		Why:   "A GPU is a whole device and cannot be overcommitted: Kubernetes only honours a GPU given as a limit, and the API refuses a GPU request without one.",
		Fix:   `Set resources.limits["nvidia.com/gpu"] on the container to the number of GPUs it uses.`},
	{ID: RuleGPUWithoutGPU, Severity: Error,
		Title: "GPU-taint toleration or GPU-pool selector without a GPU request",
		Why:   "The pod can land on a GPU node and hold it without using a GPU, so GPU workloads wait and the pool cannot scale down.",
		Fix:   `Request the GPU with resources.limits["nvidia.com/gpu"], or remove the toleration and node selector.`},
	{ID: RuleSystemPool, Severity: Error,
		Title: "Workload outside a system namespace tolerates CriticalAddonsOnly",
		Why:   "The system pool is sized for cluster add-ons; an application there competes with DNS and monitoring.",
		Fix:   "Remove the toleration (a toleration with no key tolerates every taint); run add-ons in kube-system or a system namespace."},
	{ID: RuleGPUPoolTaint, Severity: Error,
		Title: "GPU pool whose nodes lack the GPU taint",
		Why:   "Without a NoSchedule taint any pod can land on a GPU node and hold it, and a nginx replica can keep a GPU machine from scaling down.",
		Fix:   "Taint the pool's nodes gpu=true:NoSchedule (in the blueprint: pools[].taints; on AKS --node-taints, on GKE --node-taints, on EKS taints in the node group)."},
	{ID: RuleSystemPoolTaint, Severity: Error,
		Title: "System pool without the CriticalAddonsOnly taint",
		Why:   "Application pods schedule onto the system pool and starve the cluster's own add-ons.",
		Fix:   "Taint the system pool CriticalAddonsOnly=true:NoSchedule."},
	{ID: RuleGPUQuotaMissing, Severity: Error,
		Title: "Namespace running GPU workloads with no GPU quota",
		Why:   "One team can take every GPU in the cluster; nothing caps it.",
		Fix:   "Give the namespace a ResourceQuota with requests.nvidia.com/gpu (in the blueprint: teams[].quota.gpu)."},
	{ID: RuleGPUQuotaKey, Severity: Error,
		Title: "ResourceQuota written as nvidia.com/gpu instead of requests.nvidia.com/gpu",
		Why:   "The quota system only counts extended resources under the requests. prefix; the key is accepted and never enforced.",
		Fix:   "Rename the key to requests.nvidia.com/gpu."},
	{ID: RuleLimitRangeGPUDefault, Severity: Error,
		Title: "LimitRange that defaults GPUs",
		Why:   "Every container in the namespace that names no GPU is given one, including sidecars and CPU jobs.",
		Fix:   "Remove nvidia.com/gpu from default and defaultRequest; GPUs are asked for explicitly."},
	{ID: RuleLimitRangeGPUMax, Severity: Error,
		Title: "LimitRange with a GPU max but no GPU default",
		Why:   "Kubernetes copies a Container max into the default when the default is unset, so every container silently gets the max in GPUs.",
		Fix:   "Remove the GPU max (the quota caps GPUs per namespace), or set default to 0 as well."},
	{ID: RuleLimitRangeMissing, Severity: Warning,
		Title: "Namespace without a LimitRange",
		Why:   "Pods that set no requests are scheduled as if free and escape the CPU and memory quota.",
		Fix:   "Add a LimitRange with container defaults (in the blueprint: a team's defaults)."},
	{ID: RuleInferencePDB, Severity: Warning,
		Title: "Inference without a PodDisruptionBudget",
		Why:   "A node drain or pool upgrade may evict every replica at once.",
		Fix:   "Add a PodDisruptionBudget selecting the pods with minAvailable below the replica count (a class's disruption in the blueprint)."},
	{ID: RulePDBBlocksDrain, Severity: Error,
		Title: "PodDisruptionBudget whose minAvailable is at least the replica count",
		Why:   "No pod may ever be evicted, so every drain, upgrade and scale-down stalls.",
		Fix:   "Set minAvailable below the replica count, or use maxUnavailable: 1."},
	{ID: RulePDBSpansWorkloads, Severity: Warning,
		Title: "PodDisruptionBudget over several workloads",
		Why:   "The budget counts their pods together, so a drain may evict every replica of one service while the others keep the minimum.",
		Fix:   "Give each workload a budget that selects only its own pods (berth gives every workload of a class with a disruption budget its own)."},
	{ID: RuleGuardrailsNotEnforced, Severity: Warning,
		Title: "berth's guardrails only warn or audit",
		Why:   "The admission policies admit what breaks the design: namespaces outside the blueprint may run at any priority (system classes included), GPU tolerations come in from namespaces without GPUs, pods reach the System pool. Only quotas (each team's class quota included) still refuse.",
		Fix:   "Set spec.guardrails: Enforce in the blueprint and run berth apply."},
	{ID: RuleZoneFailover, Severity: Warning,
		Title: "Zone spread that keeps replacements Pending while a zone is down",
		Why:   "With nodeTaintsPolicy Ignore (the default) a dead zone, its nodes tainted unreachable, still counts as a domain with 0 replicas, so the replacements of its replicas violate maxSkew everywhere and wait until it returns; minDomains at the zone count does the same.",
		Fix:   "Set nodeTaintsPolicy: Honor on the zone constraint and leave minDomains unset or below the zone count (berth's zone-spread classes do)."},
	{ID: RuleInferenceSpread, Severity: Warning,
		Title: "Inference without zone spread",
		Why:   "Replicas may share one zone and go down with it.",
		Fix:   "Add a topologySpreadConstraint on topology.kubernetes.io/zone (a class with spread: zone in the blueprint)."},
	{ID: RuleInferenceReplicas, Severity: Warning,
		Title: "Single-replica inference Deployment",
		Why:   "Every rollout, drain or node failure is an outage.",
		Fix:   "Run at least 2 replicas (or an HPA with minReplicas 2)."},
	{ID: RuleTrainingPreemption, Severity: Warning,
		Title: "Training without preemptionPolicy: Never",
		Why:   "A queued training job evicts lower-priority work instead of waiting for room.",
		Fix:   "Use a PriorityClass with preemptionPolicy: Never (a class with preemption: Never in the blueprint)."},
	{ID: RulePriorityClassMissing, Severity: Warning,
		Title: "Pod without a PriorityClass",
		Why:   "The scheduler cannot tell it from other work when GPUs run short, so inference cannot preempt it and it cannot be preempted in order.",
		Fix:   "Set spec.priorityClassName (a berth.io/class label gives it on admission)."},
	{ID: RuleGlobalDefaultHigh, Severity: Error,
		Title: "High-priority PriorityClass that is globalDefault",
		Why:   "Every pod that names no class runs at high priority and may preempt inference and training alike.",
		Fix:   "Make the lowest class the global default, or none."},
	{ID: RuleDevicePlugin, Severity: Error,
		Title: "GPU pool the device plugin does not run on",
		Why:   "A GPU node advertises nvidia.com/gpu only while the device plugin runs on it: where its DaemonSet does not tolerate a pool's taints (or, on a live cluster, its pod is not Running on a GPU node), the GPUs are invisible and every GPU pod meant for them stays Pending.",
		Fix:   "Add a toleration of each GPU pool's taints (operator: Exists) to the device plugin's DaemonSet; on a node still without GPUs, find why the plugin's pod is not Running there."},
	{ID: RuleHPAScaleDown, Severity: Warning,
		Title: "HPA on GPU inference with a scale-down stabilization window under 5 minutes",
		Why:   "GPU replicas take minutes to start and load a model; a short window scales them away between bursts and pays the start-up again.",
		Fix:   "Set behavior.scaleDown.stabilizationWindowSeconds to 300 or more (or leave it unset: the default is 300)."},
	{ID: RuleHPAClassWindow, Severity: Warning,
		Title: "HPA or KEDA ScaledObject that scales down sooner than its class's scaleDownWindow",
		Why:   "The blueprint's class says how long load must stay low before its replicas go (10 minutes by default on a GPU pool, 5 otherwise); an autoscaler that gives them up sooner drops replicas between bursts, and each burst pays their start-up, on GPUs a model load, again.",
		Fix:   "Set the HPA's spec.behavior.scaleDown.stabilizationWindowSeconds (unset is 300 s), or the ScaledObject's spec.cooldownPeriod (unset is 300 s) and any advanced HPA window, to the class's scaleDownWindow in seconds or more."},
	{ID: RuleQueueNeverZero, Severity: Warning,
		Title: "Workload of a queue class on a GPU pool that can never reach zero replicas",
		Why:   "A class with a queue scales to zero while the queue is empty, so its GPU pool can go back to zero nodes; a replica that always stays (no autoscaler and replicas above 0, an HPA with minReplicas 1 or more, a ScaledObject with minReplicaCount 1 or more) holds a GPU node for nothing.",
		Fix:   "Scale it with a KEDA ScaledObject with minReplicaCount 0 on the queue (`berth new batch NAME --team T --queue URL` writes one), or an HPA with minReplicas 0 on an External metric of the queue's depth (the HPAScaleToZero feature gate; berth's local cluster turns it on)."},
	{ID: RuleModelInMain, Severity: Warning,
		Title: "Model pulled by the main container",
		Why:   "Every restart downloads the model again before serving, and the serving image carries download tools and credentials.",
		Fix:   "Pull the model in an init container into a shared volume (emptyDir or a PVC), and have the main container read it from there."},
	{ID: RuleModelUnpinned, Severity: Warning,
		Title: "Workload follows a model alias without pinning a version",
		Why:   "Each pod pulls whatever the alias points to when it starts, so replicas of one ReplicaSet can serve different versions, and moving the alias rolls nothing out.",
		Fix:   "Pin berth.io/model-ref: NAME:VERSION in the pod template; `berth model promote` and `rollback` do it for every workload that follows the alias."},
	{ID: RuleSpotCheckpoint, Severity: Error,
		Title: "Training on a spot pool with no checkpoint volume",
		Why:   "Spot nodes are taken away with short notice; without a checkpoint on durable storage the run starts over.",
		Fix:   "Mount a PersistentVolumeClaim (or other durable volume) and checkpoint to it, or run on an on-demand pool."},
	{ID: RuleSpotDisruption, Severity: Warning,
		Title: "Job on a spot pool whose podFailurePolicy does not ignore disruption",
		Why:   "Each spot interruption fails a pod, and without a rule that ignores pods failed with the DisruptionTarget condition it counts against the Job's backoffLimit, so a run that is interrupted often enough fails for good. The rule only helps training that meets the checkpoint contract: on SIGTERM it checkpoints within the notice (30 s on Azure and Google, 2 min on AWS), to durable storage (object storage or a PVC, not the pod's emptyDir), and at start it resumes from the latest checkpoint; otherwise the replacement pod starts from zero.",
		Fix:   "With restartPolicy: Never, add spec.podFailurePolicy.rules[0] = {action: Ignore, onPodConditions: [{type: DisruptionTarget}]} (a berth.io/class on a class with spot pools adds it on admission); with restartPolicy: OnFailure, which Kubernetes allows no podFailurePolicy, switch to Never first."},
	{ID: RuleDrift, Severity: Error,
		Title: "Cluster drifted from the blueprint",
		Why:   "The live object no longer says what the blueprint says, so the design is not what is running.",
		Fix:   "Run berth apply -f BLUEPRINT, or change the blueprint to match."},
}

// RuleByID finds a rule of the catalogue.
func RuleByID(id string) (Rule, bool) {
	for _, r := range Rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}
