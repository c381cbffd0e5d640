package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Blueprint describes a cluster ready for ML and data workloads.
type Blueprint struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata names a blueprint. Its name is stamped on every object berth
// creates from it, so two blueprints can share a cluster without touching
// each other's objects.
type Metadata struct {
	// Name is a DNS-1123 label. Required.
	Name string `json:"name"`
	// Labels are copied onto nothing; they are for the user's own tooling.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations, likewise, are the user's own.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Spec is the desired shape of the cluster.
type Spec struct {
	// KubernetesVersion is the minor version the design targets ("1.36").
	// Empty means the version berth embeds.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Zones are the failure domains nodes are spread over. Empty means one
	// zone, "zone-1".
	Zones []string `json:"zones,omitempty"`
	// Pools are the node pools. At least one must have mode System.
	Pools []Pool `json:"pools"`
	// Teams each get namespaces, a ResourceQuota and a LimitRange.
	Teams []Team `json:"teams,omitempty"`
	// Classes are workload classes: what a workload labelled
	// berth.io/class=NAME receives (pools, priority, disruption, spread).
	Classes []Class `json:"classes,omitempty"`
	// SystemNamespaces may run on System pools, tolerate their taints,
	// set spec.nodeName, and run GPU-pool add-ons such as a device
	// plugin. Empty means [kube-system].
	SystemNamespaces []string `json:"systemNamespaces,omitempty"`
	// Guardrails says what the admission policies berth generates do
	// with a workload that breaks the design: Enforce refuses it, Warn
	// admits it with a warning, Audit admits it and records an audit
	// annotation, Off installs no policies. Empty means Enforce. Every
	// pod must pass every policy in a cluster, so at most one blueprint
	// per cluster may have guardrails.
	Guardrails GuardrailMode `json:"guardrails,omitempty"`
	// Models, when set, wires model artifacts into workloads (models.go).
	Models *Models `json:"models,omitempty"`
	// Storage declares the storage classes claims name (storage.go). Nil
	// means the default classes.
	Storage *Storage `json:"storage,omitempty"`
	// Autoscaler is the node autoscaler's profile (autoscaler.go). Nil
	// means cluster-autoscaler's defaults.
	Autoscaler *AutoscalerProfile `json:"autoscaler,omitempty"`
	// DevicePlugin is the GPU device plugin DaemonSet (autoscaler.go).
	// Nil means NVIDIA's, installed by `berth up`.
	DevicePlugin *DevicePlugin `json:"devicePlugin,omitempty"`
	// Provisioner is what starts and removes the User pools' nodes:
	// ClusterAutoscaler (berth's node autoscaler, with
	// cluster-autoscaler's semantics and spec.autoscaler's profile) or
	// Karpenter (Karpenter's own controllers, run by `berth up` on the
	// NodePools `berth export --target karpenter` writes). Empty means
	// ClusterAutoscaler.
	Provisioner Provisioner `json:"provisioner,omitempty"`
	// Queueing is what holds each team's work to its quota:
	// ResourceQuota (a quota per team namespace) or Kueue (a
	// ClusterQueue per team in one cohort, its GPUs per pool; see
	// queueing.go). Empty means ResourceQuota.
	Queueing Queueing `json:"queueing,omitempty"`
	// FairSharing, under queueing: Kueue, has Kueue share among the
	// teams what they leave unused in proportion to each team's
	// queue.weight, and lets a team below its share preempt the borrowed
	// work of a team above it (Kueue's fair sharing). It is a setting of
	// Kueue itself, which berth up reads when it starts Kueue. False is
	// Kueue's default: what is lent goes first come, first served.
	FairSharing bool `json:"fairSharing,omitempty"`
}

// Provisioner names what provisions a cluster's User pool nodes.
type Provisioner string

const (
	// ProvisionerClusterAutoscaler is berth's node autoscaler: pools grow
	// and shrink between their autoscale min and max.
	ProvisionerClusterAutoscaler Provisioner = "ClusterAutoscaler"
	// ProvisionerKarpenter is Karpenter: a NodePool per User pool, nodes
	// (NodeClaims) started for pending pods only, consolidated, drifted
	// and expired by Karpenter's controllers. System pools keep their
	// fixed nodes, as an EKS managed node group does.
	ProvisionerKarpenter Provisioner = "Karpenter"
)

// UsesKarpenter reports whether Karpenter provisions the blueprint's
// User pools.
func (s *Spec) UsesKarpenter() bool { return s.Provisioner == ProvisionerKarpenter }

// GuardrailMode is what berth's admission policies do with a violation.
type GuardrailMode string

const (
	GuardrailsEnforce GuardrailMode = "Enforce"
	GuardrailsWarn    GuardrailMode = "Warn"
	GuardrailsAudit   GuardrailMode = "Audit"
	GuardrailsOff     GuardrailMode = "Off"
)

// PoolMode follows AKS: System pools host cluster add-ons, User pools host
// workloads.
type PoolMode string

const (
	// ModeSystem pools run Linux and never scale to zero.
	ModeSystem PoolMode = "System"
	// ModeUser pools may scale to zero and may run Windows.
	ModeUser PoolMode = "User"
)

// OS is a pool's node operating system.
type OS string

const (
	Linux   OS = "Linux"
	Windows OS = "Windows"
)

// CapacityType says how a pool's machines are bought.
type CapacityType string

const (
	// OnDemand machines stay until the pool shrinks.
	OnDemand CapacityType = "OnDemand"
	// Spot machines are cheaper and can be taken away with short notice.
	Spot CapacityType = "Spot"
)

// Pool is a group of identical nodes.
type Pool struct {
	// Name is a DNS-1123 label, unique among pools. Nodes carry it as the
	// labels berth.io/pool and agentpool.
	Name string `json:"name"`
	// KubernetesVersion is the minor version of the pool's kubelets
	// ("1.35"): never newer than the control plane, at most three minors
	// older. Changing it replaces the pool blue/green. Empty means
	// spec.kubernetesVersion.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Mode is System or User. Empty means User.
	Mode PoolMode `json:"mode,omitempty"`
	// OS is Linux or Windows. Empty means Linux.
	OS OS `json:"os,omitempty"`
	// Capacity is OnDemand or Spot. Empty means OnDemand.
	Capacity CapacityType `json:"capacity,omitempty"`
	// Machine is the shape of every node in the pool. Required.
	Machine Machine `json:"machine"`
	// Count is a fixed pool size. Set Count or Autoscale, not both; with
	// neither the pool has one node.
	Count *int32 `json:"count,omitempty"`
	// Autoscale lets the pool grow and shrink between Min and Max.
	Autoscale *Autoscale `json:"autoscale,omitempty"`
	// Spot says how a Spot pool's capacity is taken away on the local
	// cluster (spot.go). Nil means 30 s notices, and interruptions only
	// when asked for (`berth spot interrupt`).
	Spot *SpotSettings `json:"spot,omitempty"`
	// Price is what a node-hour of the pool costs, on demand and on spot
	// (price.go), for `berth rehearse`'s cost report; nothing else reads
	// it, and `berth export` does not carry it. Nil means a row of
	// berth's price table (internal/prices; `--prices FILE` rows
	// replace its rows): the one for the instance type `berth export`
	// gives the pool on the rehearsal's cloud, else the one for
	// machine.type; with no row the pool has no price, and the report
	// says so rather than count it as free.
	Price *Price `json:"price,omitempty"`
	// MaxPods is each node's pod capacity. Zero means 110.
	MaxPods int32 `json:"maxPods,omitempty"`
	// Taints are the taints on every node of the pool, written as
	// kubectl writes them: KEY[=VALUE]:EFFECT.
	Taints []Taint `json:"taints,omitempty"`
	// Labels are added to every node of the pool.
	Labels map[string]string `json:"labels,omitempty"`
	// Zones restricts the pool to some of spec.zones. Empty means all.
	Zones []string `json:"zones,omitempty"`
	// Reserved is held back from every node for the system (the kubelet's
	// system-reserved): allocatable is capacity minus Reserved. Nil
	// means nothing is reserved.
	Reserved *Reserved `json:"reserved,omitempty"`
}

// Machine is a node's shape.
type Machine struct {
	// CPU is the node's CPU capacity in cores ("16", or "3500m"). Required.
	CPU resource.Quantity `json:"cpu"`
	// Memory is the node's memory capacity ("64Gi"). Required.
	Memory resource.Quantity `json:"memory"`
	// GPU, when set, gives every node that many accelerators.
	GPU *GPU `json:"gpu,omitempty"`
	// Type is the instance type stamped on the node as
	// node.kubernetes.io/instance-type. Empty means one derived from the
	// shape, such as "c24-m96gi-1xnvidia-l4".
	Type string `json:"type,omitempty"`
	// InstanceTypes names the machine on each cloud, for `berth export`.
	// A target left empty is looked up in berth's catalog by shape (see
	// docs/reference/instance-types.md); a shape the catalog lacks must be
	// named here.
	InstanceTypes *InstanceTypes `json:"instanceTypes,omitempty"`
}

// InstanceTypes are a machine's names on the clouds berth exports to.
type InstanceTypes struct {
	// AKS is an Azure VM size ("Standard_NC24ads_A100_v4").
	AKS string `json:"aks,omitempty"`
	// EKS is an EC2 instance type ("g6.8xlarge"); Karpenter uses it too.
	EKS string `json:"eks,omitempty"`
	// GKE is a Compute Engine machine type ("g2-standard-24").
	GKE string `json:"gke,omitempty"`
}

// GPU describes the accelerators on each node of a pool.
type GPU struct {
	// Count is GPUs per node, at least 1.
	Count int32 `json:"count"`
	// Product is the label nvidia.com/gpu.product ("NVIDIA-L4").
	// Required.
	Product string `json:"product"`
	// Resource is the extended resource the device plugin advertises.
	// Empty means nvidia.com/gpu.
	Resource string `json:"resource,omitempty"`
}

// Autoscale bounds a pool's size.
type Autoscale struct {
	// Min is the smallest size. Zero lets a User pool scale to zero.
	Min int32 `json:"min"`
	// Max is the largest size, at least Min and at least 1.
	Max int32 `json:"max"`
	// Priority ranks the pool for the autoscaler's priority expander:
	// when several pools could hold pending pods, the highest priority
	// grows. Zero is the lowest.
	Priority int32 `json:"priority,omitempty"`
	// ProvisioningTime is how long a node the autoscaler adds to this
	// pool takes to become Ready on the local cluster, as a cloud takes
	// minutes to boot a GPU machine. Nil means 0s. Clouds ignore it.
	ProvisioningTime *metav1.Duration `json:"provisioningTime,omitempty"`
}

// Reserved is what each node keeps for itself.
type Reserved struct {
	CPU    *resource.Quantity `json:"cpu,omitempty"`
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// Team is a group of users sharing a quota.
type Team struct {
	// Name is a DNS-1123 label, unique among teams.
	Name string `json:"name"`
	// Namespaces the team owns. Empty means one namespace named like the
	// team.
	Namespaces []string `json:"namespaces,omitempty"`
	// Quota caps what the team's namespaces request in total, per
	// namespace. Nil means no quota.
	Quota *Quota `json:"quota,omitempty"`
	// Defaults are the LimitRange's container defaults. Nil means
	// cpu 500m / memory 512Mi requests and 1 / 1Gi limits.
	Defaults *ContainerDefaults `json:"defaults,omitempty"`
	// Classes the team may use. Empty means every class.
	Classes []string `json:"classes,omitempty"`
	// Queue is how the team queues under queueing: Kueue: its GPUs by
	// pool, and what it borrows and lends. Nil means Kueue's defaults
	// on a split of quota.gpu by the pools' sizes.
	Queue *TeamQueue `json:"queue,omitempty"`
}

// Quota is a team's ResourceQuota. GPU becomes requests.nvidia.com/gpu,
// the only key the quota system honours for extended resources.
type Quota struct {
	GPU    *resource.Quantity `json:"gpu,omitempty"`
	CPU    *resource.Quantity `json:"cpu,omitempty"`
	Memory *resource.Quantity `json:"memory,omitempty"`
	Pods   *resource.Quantity `json:"pods,omitempty"`
}

// ContainerDefaults feed a team's LimitRange. GPUs are never defaulted.
type ContainerDefaults struct {
	CPURequest    *resource.Quantity `json:"cpuRequest,omitempty"`
	MemoryRequest *resource.Quantity `json:"memoryRequest,omitempty"`
	CPULimit      *resource.Quantity `json:"cpuLimit,omitempty"`
	MemoryLimit   *resource.Quantity `json:"memoryLimit,omitempty"`
	// CPUMax and MemoryMax are the most one container may ask for. Nil
	// means the largest machine among the pools: a container bigger than
	// every node could never be scheduled, so it is refused at once.
	CPUMax    *resource.Quantity `json:"cpuMax,omitempty"`
	MemoryMax *resource.Quantity `json:"memoryMax,omitempty"`
}

// PriorityLevel is a class's place in the scheduling order.
type PriorityLevel string

const (
	PriorityHigh   PriorityLevel = "high"
	PriorityMedium PriorityLevel = "medium"
	PriorityLow    PriorityLevel = "low"
)

// PreemptionPolicy mirrors the PriorityClass field of the same name.
type PreemptionPolicy string

const (
	PreemptLowerPriority PreemptionPolicy = "PreemptLowerPriority"
	PreemptNever         PreemptionPolicy = "Never"
)

// SpreadPolicy says how a class's replicas are spread.
type SpreadPolicy string

const (
	SpreadNone SpreadPolicy = "none"
	SpreadZone SpreadPolicy = "zone"
)

// Class is a workload class.
type Class struct {
	// Name is a DNS-1123 label, unique among classes.
	Name string `json:"name"`
	// Priority becomes the PriorityClass NAME-PRIORITY. Empty means the
	// class gets no PriorityClass of its own.
	Priority PriorityLevel `json:"priority,omitempty"`
	// Preemption is PreemptLowerPriority or Never. Empty means
	// PreemptLowerPriority.
	Preemption PreemptionPolicy `json:"preemption,omitempty"`
	// Pools the class runs on, in preference order. Required.
	Pools []string `json:"pools"`
	// Disruption, when set, gives the class's workloads a
	// PodDisruptionBudget.
	Disruption *Disruption `json:"disruption,omitempty"`
	// Spread is zone or none. Empty means none.
	Spread SpreadPolicy `json:"spread,omitempty"`
	// GlobalDefault makes the class's PriorityClass the default for pods
	// that name none. At most one class may set it, and only with a
	// priority.
	GlobalDefault bool `json:"globalDefault,omitempty"`
	// Role is Serving, Training or General. Serving and Training pods that
	// ask for GPUs keep off each other's nodes (seed 000: inference
	// servers avoid sharing nodes with training jobs using the same GPU).
	// Empty means Serving for a class with priority high, Training for a
	// class with preemption Never, General otherwise.
	Role ClassRole `json:"role,omitempty"`
	// Isolation is how strictly a Serving or Training class's GPU pods
	// keep off the other role's nodes: Required (a pod anti-affinity the
	// scheduler must honour), Preferred (one it weighs), or None. Empty
	// means Required.
	Isolation Isolation `json:"isolation,omitempty"`
	// Scaling says how the class's workloads scale: an HPA on a metric,
	// or KEDA on a queue (scaling.go). Nil means berth says nothing.
	Scaling *Scaling `json:"scaling,omitempty"`
}

// ClassRole says what a class's workloads do.
type ClassRole string

const (
	RoleServing  ClassRole = "Serving"
	RoleTraining ClassRole = "Training"
	RoleGeneral  ClassRole = "General"
)

// Isolation is how strictly serving and training GPU pods keep apart.
type Isolation string

const (
	IsolationRequired  Isolation = "Required"
	IsolationPreferred Isolation = "Preferred"
	IsolationNone      Isolation = "None"
)

// Disruption becomes a PodDisruptionBudget. Set one of the two.
type Disruption struct {
	MinAvailable   *intstr.IntOrString `json:"minAvailable,omitempty"`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}
