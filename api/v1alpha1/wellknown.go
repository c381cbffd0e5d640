package v1alpha1

// Well-known names: every label, annotation and taint key, rule ID,
// metric name and field manager berth writes or reads, declared here
// once. Packages use these constants; none keeps a copy or spells one
// out as a literal. A name another component owns (AKS, Karpenter,
// cluster-autoscaler, NVIDIA) is written as that component writes it.

// Labels berth puts on the nodes of a pool (internal/pools), and the
// exports put on cloud nodes, so that selectors rehearsed locally keep
// working.
const (
	// LabelPool names a node's pool.
	LabelPool = "berth.io/pool"
	// LabelMode is the pool's mode in lower case: system or user.
	LabelMode = "berth.io/mode"
	// LabelCapacity is spot or on-demand. As a taint key
	// (berth.io/capacity=spot:NoSchedule) it keeps pods off spot nodes.
	LabelCapacity = "berth.io/capacity"
	// LabelBlueprint names the blueprint an object, or a node's pool,
	// belongs to, so that two blueprints can share a cluster.
	LabelBlueprint = "berth.io/blueprint"
	// LabelPoolGeneration counts a pool's blue/green replacements: nodes
	// of generation N+1 replace those of generation N.
	LabelPoolGeneration = "berth.io/pool-generation"
	// LabelAgentPool is AKS's pool label, so manifests written for AKS
	// (nodeSelector: agentpool: NAME) work unchanged.
	LabelAgentPool = "agentpool"
	// LabelAKSAgentPool and LabelAKSMode are AKS's own node labels.
	LabelAKSAgentPool = "kubernetes.azure.com/agentpool"
	LabelAKSMode      = "kubernetes.azure.com/mode"
	// LabelAKSPriority is "spot" on AKS spot nodes; as a taint key it
	// is AKS's spot taint.
	LabelAKSPriority = "kubernetes.azure.com/scalesetpriority"
	// LabelEKSNodeGroup and LabelEKSCapacityType are EKS managed node
	// groups' labels.
	LabelEKSNodeGroup    = "eks.amazonaws.com/nodegroup"
	LabelEKSCapacityType = "eks.amazonaws.com/capacityType"
	// LabelGKENodePool, LabelGKESpot, LabelGKEPreemptible and
	// LabelGKEAccelerator are GKE's node labels.
	LabelGKENodePool    = "cloud.google.com/gke-nodepool"
	LabelGKESpot        = "cloud.google.com/gke-spot"
	LabelGKEPreemptible = "cloud.google.com/gke-preemptible"
	LabelGKEAccelerator = "cloud.google.com/gke-accelerator"
	// LabelKarpenterNodePool and LabelCapacityType are Karpenter's; berth
	// sets karpenter.sh/capacity-type (spot or on-demand) on every node.
	LabelKarpenterNodePool = "karpenter.sh/nodepool"
	LabelCapacityType      = "karpenter.sh/capacity-type"
	// LabelKarpenterGPUCount and LabelKarpenterGPUName are the AWS
	// provider's instance labels.
	LabelKarpenterGPUCount = "karpenter.k8s.aws/instance-gpu-count"
	LabelKarpenterGPUName  = "karpenter.k8s.aws/instance-gpu-name"
	// LabelGPUProduct, LabelGPUCount and LabelGPUPresent are the labels
	// NVIDIA's GPU feature discovery puts on GPU nodes.
	LabelGPUProduct = "nvidia.com/gpu.product"
	LabelGPUCount   = "nvidia.com/gpu.count"
	LabelGPUPresent = "nvidia.com/gpu.present"
)

// Labels on the objects berth creates and on workloads.
const (
	// LabelManagedBy, with the value ManagedBy, marks every object berth
	// creates. Together with FieldManager it decides what berth may
	// change or delete.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "berth"
	// LabelTeam names the team a namespace belongs to.
	LabelTeam = "berth.io/team"
	// LabelClass puts a workload in a class: its pods get the class's
	// pools, priority, budget and spread on admission.
	LabelClass = "berth.io/class"
	// LabelKueueQueueName is Kueue's label naming the LocalQueue a Job
	// waits in; LabelKueuePriorityClass, its WorkloadPriorityClass.
	LabelKueueQueueName     = "kueue.x-k8s.io/queue-name"
	LabelKueuePriorityClass = "kueue.x-k8s.io/priority-class"
	// LabelBudgetFor, on a budget berth made, names the workload it
	// protects, as KIND.NAME (deployment.reco).
	LabelBudgetFor = "berth.io/budget-for"
	// LabelRehearsal marks the workloads `berth rehearse` submits from a
	// trace; its value is the trace row's kind (training, batch,
	// inference).
	LabelRehearsal = "berth.io/rehearsal"
	// LabelAppName and LabelAppComponent are Kubernetes' recommended
	// labels; scaffolds set them and audit reads the component as a hint
	// of a workload's role.
	LabelAppName      = "app.kubernetes.io/name"
	LabelAppComponent = "app.kubernetes.io/component"
)

// Annotations berth writes and reads.
const (
	// AnnotationNodeImages, on the node class berth makes for Karpenter,
	// is each User pool's Kubernetes version (POOL=v1.36.3,...): the
	// machine images the node class resolves to, as an EC2NodeClass's
	// AMIs. A change makes Karpenter look for drift at once.
	AnnotationNodeImages = "berth.io/node-images"
	// AnnotationSystemReserved, on a simulated node, is what it keeps
	// for itself, as the kubelet's --system-reserved flag writes it.
	AnnotationSystemReserved = "berth.io/system-reserved"
	// AnnotationPoolLabels lists the keys of the pool's own labels on a
	// node, so that a label dropped from the blueprint can be removed.
	AnnotationPoolLabels = "berth.io/pool-labels"
	// AnnotationDevices lists the devices a simulated machine has
	// (nvidia.com/gpu=4): what its device plugin advertises once it runs
	// there. The node registers without them.
	AnnotationDevices = "berth.io/devices"
	// AnnotationKWOKNode "fake" hands a node's kubelet to KWOK.
	AnnotationKWOKNode = "kwok.x-k8s.io/node"
	// AnnotationKubeletStopped on a node stops its simulated kubelet
	// (`berth node stop`); its value is when.
	AnnotationKubeletStopped = "berth.io/kubelet-stopped"
	// AnnotationDuration on a Job pod is how long it runs, as a Go
	// duration, before it completes.
	AnnotationDuration = "berth.io/duration"
	// AnnotationCheckpoint on a Job is how often its pods save their
	// work, as a Go duration: a rehearsal's Jobs carry their row's, and
	// `berth record` reads it back (a pod interrupted keeps the work up
	// to its last checkpoint).
	AnnotationCheckpoint = "berth.io/checkpoint"
	// AnnotationSpotInterruption holds when a spot node's notice ends
	// (RFC 3339): the node is deleted then. AnnotationSpotNotice holds
	// the notice's length, as given.
	AnnotationSpotInterruption = "berth.io/spot-interruption"
	AnnotationSpotNotice       = "berth.io/spot-notice"
	// AnnotationBudgets, on a team namespace, holds the disruption
	// budget of each class that has one, as JSON.
	AnnotationBudgets = "berth.io/budgets"
	// AnnotationGPULimitMissing marks a pod or template whose containers
	// asked for GPUs in requests only; its value names the containers.
	AnnotationGPULimitMissing = "berth.io/gpu-limit-missing"
	// AnnotationModel, on a Deployment or StatefulSet, is the model it
	// follows: NAME@ALIAS or NAME:VERSION.
	AnnotationModel = "berth.io/model"
	// AnnotationModelRef, on a pod template, is the version its pods
	// pull: NAME:VERSION once pinned (by `berth model promote`), else
	// the followed NAME@ALIAS. The init container reads it through the
	// downward API, so all pods of one ReplicaSet pull the same version.
	AnnotationModelRef = "berth.io/model-ref"
	// AnnotationModelSize, on a pod template, sizes the model's emptyDir.
	AnnotationModelSize = "berth.io/model-size"
	// AnnotationAuditIgnore on an object lists the rules
	// (comma-separated IDs) that audit leaves out for that object: the
	// exemptions a team has decided on, kept next to what they exempt.
	AnnotationAuditIgnore = "audit.berth.io/ignore"
	// AnnotationSafeToEvict "false" on a pod keeps its node from
	// cluster-autoscaler's scale-down; "true" lets a pod with local
	// storage or in kube-system move.
	AnnotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// AnnotationScaleDownDisabled "true" on a node keeps it.
	AnnotationScaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	// AnnotationAutoscalerLastUpdated is cluster-autoscaler's annotation
	// on its status ConfigMap.
	AnnotationAutoscalerLastUpdated = "cluster-autoscaler.kubernetes.io/last-updated"
)

// Taint keys.
const (
	// TaintCriticalAddonsOnly keeps all but cluster add-ons off System
	// pools, as on AKS.
	TaintCriticalAddonsOnly = "CriticalAddonsOnly"
	// TaintNVIDIAGPU is GKE's GPU taint (nvidia.com/gpu=present), which
	// NVIDIA's device plugin tolerates.
	TaintNVIDIAGPU = ResourceNVIDIAGPU
	// TaintSpotInterruption is the taint AWS's node termination handler
	// puts on a node whose spot interruption notice has come (GKE's
	// equivalent is cloud.google.com/impending-node-termination,
	// Karpenter's karpenter.sh/disrupted); NoSchedule, so no new pod
	// lands there.
	TaintSpotInterruption = "aws-node-termination-handler/spot-itn"
	// TaintToBeDeleted is cluster-autoscaler's taint on a node it is
	// about to remove; TaintDeletionCandidate (soft) on one it
	// considers unneeded, so the scheduler prefers other nodes.
	TaintToBeDeleted       = "ToBeDeletedByClusterAutoscaler"
	TaintDeletionCandidate = "DeletionCandidateOfClusterAutoscaler"
)

// Kueue's webhook configurations, as its release manifests name them
// (the "kueue-" prefix on config/components/webhook's names): registered
// by berth-kueue (internal/kueue), removed by a local cluster started
// without Kueue, where they would refuse every Job.
const (
	KueueMutatingWebhooks   = "kueue-mutating-webhook-configuration"
	KueueValidatingWebhooks = "kueue-validating-webhook-configuration"
)

// KueueClockFollower is the name berth-kueue follows a rehearsal's clock
// under (simtime.Clock.Remote, simtime.Activity.Follows): its watch
// streams carry it, and the clock's Driver names it when it waits on
// Kueue.
const KueueClockFollower = "kueue"

// KueueVisibilityService is the Service, in kube-system, behind which
// berth-kueue serves Kueue's visibility API (its pending Workloads and
// their positions): the APIServices name it, and a local cluster's API
// server resolves it to berth-kueue's loopback address. Kueue's
// manifests name theirs the same, in kueue-system.
const KueueVisibilityService = "kueue-visibility-server"

// KueueVisibilityAPIServices are the APIServices of Kueue's visibility
// API, one per version Kueue serves: registered by berth-kueue, removed
// by a local cluster started without Kueue.
var KueueVisibilityAPIServices = []string{"v1beta2.visibility.kueue.x-k8s.io", "v1beta1.visibility.kueue.x-k8s.io"}

// Field managers: who wrote a field, for server-side apply and for
// people reading managedFields.
const (
	// FieldManager is berth's commands: apply, pools, model moves, node
	// stop and start.
	FieldManager = "berth"
	// FieldManagerBudgets is the budgets controller.
	FieldManagerBudgets = "berth-budgets"
	// FieldManagerSpot is spot interruptions.
	FieldManagerSpot = "berth-spot"
	// FieldManagerAutoscaler is the node autoscaler.
	FieldManagerAutoscaler = "berth-autoscaler"
)

// Rule IDs, as they appear at the start of every refusal by the
// guardrails (internal/compile) and in every audit finding
// (internal/audit). An ID both use means the same thing in both: a pod
// the admission policy refuses is the finding audit reports on a cluster
// that has no policies.
const (
	RuleGPULimit              = "berth/gpu-limit"
	RuleGPUWithoutGPU         = "berth/gpu-toleration-without-gpu"
	RuleGPUNamespace          = "berth/gpu-namespace"
	RuleSystemPool            = "berth/system-pool"
	RuleNodeName              = "berth/node-name"
	RulePriorityClass         = "berth/priority-class"
	RulePriorityValue         = "berth/priority-value"
	RulePriorityCeiling       = "berth/priority-ceiling"
	RuleGlobalDefault         = "berth/priority-global-default"
	RuleClassPreemption       = "berth/class-preemption"
	RuleClassPriority         = "berth/class-priority"
	RuleNamespaceLabels       = "berth/namespace-labels"
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
	RuleDevicePlugin          = "berth/device-plugin-tolerations"
	RuleHPAScaleDown          = "berth/hpa-scale-down"
	RuleHPAClassWindow        = "berth/hpa-class-window"
	RuleQueueNeverZero        = "berth/queue-never-zero"
	RuleModelInMain           = "berth/model-pull-main-container"
	RuleModelUnpinned         = "berth/model-unpinned"
	RuleSpotCheckpoint        = "berth/spot-checkpoint"
	RuleSpotDisruption        = "berth/spot-disruption-policy"
	RuleDrift                 = "berth/drift"
	RuleClaimClass            = "berth/claim-class"
	RuleClaimAccessMode       = "berth/claim-access-mode"
	RuleQuotaHeldWaiting      = "berth/quota-held-waiting"
	RuleTeamQueue             = "berth/team-queue"
)

// Metric names the local cluster's metrics APIs serve, named as they are
// scraped on real clusters, so that an HPA written for a local cluster
// reads the same names through prometheus-adapter on a real one.
const (
	// MetricRequestsPerSecond is an inference server's request rate
	// (custom.metrics.k8s.io, per pod).
	MetricRequestsPerSecond = "requests_per_second"
	// MetricGPUUtil is the DCGM exporter's GPU utilisation in percent
	// (custom.metrics.k8s.io, per pod).
	MetricGPUUtil = "DCGM_FI_DEV_GPU_UTIL"
	// MetricRabbitMQDepth, MetricKafkaLag and MetricSQSDepth are each
	// broker's exporter's queue depth (external.metrics.k8s.io).
	MetricRabbitMQDepth = "rabbitmq_queue_messages_ready"
	MetricKafkaLag      = "kafka_consumergroup_lag"
	MetricSQSDepth      = "aws_sqs_approximate_number_of_messages_visible_average"
	// MetricQueueLabel is the label an external metric's selector picks
	// a queue by: queue=NAME.
	MetricQueueLabel = "queue"
)

// Resources.
const (
	// ResourceNVIDIAGPU is the extended resource NVIDIA's device plugin
	// advertises, one per GPU; the default of a pool's gpu.resource.
	ResourceNVIDIAGPU = "nvidia.com/gpu"
)
