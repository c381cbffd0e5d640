// Package castatus is what berth's node autoscaler publishes, in
// cluster-autoscaler's own names and formats, so that whatever reads a
// real cluster-autoscaler (dashboards, scripts, `kubectl describe`)
// reads berth's too: the cluster-autoscaler-status ConfigMap in
// kube-system, and the events on pods and nodes. `berth status` and
// `berth why` read them back through this package.
package castatus

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The status ConfigMap: its name, namespace and data keys. StatusKey
// holds cluster-autoscaler's YAML status; ActivityKey holds berth's own
// record of each pool's last scale-up and scale-down with its reason.
const (
	ConfigMapName      = "cluster-autoscaler-status"
	ConfigMapNamespace = metav1.NamespaceSystem
	StatusKey          = "status"
	ActivityKey        = "berth-activity"
)

// Event reasons, as cluster-autoscaler emits them.
const (
	// On a pending pod: a pool grows for it, or none does and why.
	ReasonTriggeredScaleUp  = "TriggeredScaleUp"
	ReasonNotTriggerScaleUp = "NotTriggerScaleUp"
	// On a pod evicted by scale-down.
	ReasonScaleDown = "ScaleDown"
	// On a node: removed, failed to be removed, or kept and why.
	ReasonScaleDownNode   = "ScaleDown"
	ReasonScaleDownFailed = "ScaleDownFailed"
	ReasonNoScaleDown     = "NoScaleDown"
	// On the status ConfigMap: a pool's size changed.
	ReasonScaledUpGroup   = "ScaledUpGroup"
	ReasonScaleDownEmpty  = "ScaleDownEmpty"
	ReasonFailedScaleUp   = "FailedToScaleUpGroup"
	ReasonScaleUpTimedOut = "ScaleUpTimedOut"
)

// Status is the YAML under StatusKey, field for field cluster-autoscaler's
// clusterstate/api ClusterAutoscalerStatus.
type Status struct {
	Time             string            `json:"time,omitempty"`
	AutoscalerStatus string            `json:"autoscalerStatus,omitempty"`
	Message          string            `json:"message,omitempty"`
	ClusterWide      ClusterWideStatus `json:"clusterWide,omitempty"`
	NodeGroups       []NodeGroupStatus `json:"nodeGroups,omitempty"`
}

// ClusterWideStatus is the state of the whole cluster.
type ClusterWideStatus struct {
	Health    HealthCondition    `json:"health,omitempty"`
	ScaleUp   ScaleUpCondition   `json:"scaleUp,omitempty"`
	ScaleDown ScaleDownCondition `json:"scaleDown,omitempty"`
}

// NodeGroupStatus is one pool.
type NodeGroupStatus struct {
	Name      string             `json:"name,omitempty"`
	Health    HealthCondition    `json:"health,omitempty"`
	ScaleUp   ScaleUpCondition   `json:"scaleUp,omitempty"`
	ScaleDown ScaleDownCondition `json:"scaleDown,omitempty"`
}

// HealthCondition counts nodes. CloudProviderTarget, MinSize and MaxSize
// are set for node groups only.
type HealthCondition struct {
	Status              string      `json:"status,omitempty"`
	NodeCounts          NodeCounts  `json:"nodeCounts,omitempty"`
	CloudProviderTarget *int        `json:"cloudProviderTarget,omitempty"`
	MinSize             *int        `json:"minSize,omitempty"`
	MaxSize             *int        `json:"maxSize,omitempty"`
	LastProbeTime       metav1.Time `json:"lastProbeTime,omitempty"`
	LastTransitionTime  metav1.Time `json:"lastTransitionTime,omitempty"`
}

// NodeCounts are cluster-autoscaler's node counts: registered nodes by
// state, and nodes the cloud is still provisioning (unregistered).
type NodeCounts struct {
	Registered       RegisteredCounts `json:"registered,omitempty"`
	LongUnregistered int              `json:"longUnregistered"`
	Unregistered     int              `json:"unregistered"`
}

// RegisteredCounts are the nodes that exist in the API.
type RegisteredCounts struct {
	Total        int           `json:"total"`
	Ready        int           `json:"ready"`
	NotStarted   int           `json:"notStarted"`
	BeingDeleted int           `json:"beingDeleted,omitempty"`
	Unready      UnreadyCounts `json:"unready,omitempty"`
}

// UnreadyCounts are registered nodes that are not ready; ResourceUnready
// are those waiting for a resource such as GPUs to be advertised.
type UnreadyCounts struct {
	Total           int `json:"total"`
	ResourceUnready int `json:"resourceUnready"`
}

// ScaleUpCondition is NoActivity, InProgress or Backoff.
type ScaleUpCondition struct {
	Status             string       `json:"status,omitempty"`
	BackoffInfo        *BackoffInfo `json:"backoffInfo,omitempty"`
	LastProbeTime      metav1.Time  `json:"lastProbeTime,omitempty"`
	LastTransitionTime metav1.Time  `json:"lastTransitionTime,omitempty"`
}

// BackoffInfo says why a pool is backed off.
type BackoffInfo struct {
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// ScaleDownCondition is NoCandidates or CandidatesPresent.
type ScaleDownCondition struct {
	Status             string      `json:"status,omitempty"`
	Candidates         int         `json:"candidates,omitempty"`
	LastProbeTime      metav1.Time `json:"lastProbeTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// Condition statuses.
const (
	Running           = "Running"
	Healthy           = "Healthy"
	NoActivity        = "NoActivity"
	InProgress        = "InProgress"
	Backoff           = "Backoff"
	NoCandidates      = "NoCandidates"
	CandidatesPresent = "CandidatesPresent"
)

// Activity is berth's record, under ActivityKey, of what each pool last
// did and why: `berth status` shows it.
type Activity struct {
	Pools []PoolActivity `json:"pools"`
}

// PoolActivity is one pool's last scale-up and scale-down.
type PoolActivity struct {
	Name          string `json:"name"`
	Target        int    `json:"target"`
	Min           int    `json:"min"`
	Max           int    `json:"max"`
	Ready         int    `json:"ready"`
	Upcoming      int    `json:"upcoming"`
	LastScaleUp   *Event `json:"lastScaleUp,omitempty"`
	LastScaleDown *Event `json:"lastScaleDown,omitempty"`
	// Blocked is why the pool's unneeded nodes stay, one entry per node:
	// "NODE: " and the problem as problem.Problem's String writes it,
	// its fix on a line of its own.
	Blocked []string `json:"blocked,omitempty"`
}

// Event is one scale decision.
type Event struct {
	Time   metav1.Time `json:"time"`
	From   int         `json:"from"`
	To     int         `json:"to"`
	Reason string      `json:"reason"`
}

// Read decodes the status ConfigMap. A ConfigMap without berth's
// activity (a real cluster-autoscaler's) gives a nil Activity.
func Read(cm *corev1.ConfigMap) (*Status, *Activity, error) {
	var s Status
	if err := yaml.Unmarshal([]byte(cm.Data[StatusKey]), &s); err != nil {
		return nil, nil, fmt.Errorf("reading %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	raw, ok := cm.Data[ActivityKey]
	if !ok {
		return &s, nil, nil
	}
	var a Activity
	if err := yaml.Unmarshal([]byte(raw), &a); err != nil {
		return nil, nil, fmt.Errorf("reading %s/%s %s: %w", cm.Namespace, cm.Name, ActivityKey, err)
	}
	return &s, &a, nil
}

// Data encodes a status and activity as the ConfigMap's data.
func Data(s *Status, a *Activity) (map[string]string, error) {
	sb, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	ab, err := yaml.Marshal(a)
	if err != nil {
		return nil, err
	}
	return map[string]string{StatusKey: string(sb), ActivityKey: string(ab)}, nil
}

// ScaleUp is one pool's growth, as a TriggeredScaleUp event lists it.
type ScaleUp struct {
	Pool     string
	From, To int
	Max      int
}

// TriggeredMessage is a TriggeredScaleUp event's message, in
// cluster-autoscaler's format: pod triggered scale-up: [{gpu 0->1 (max: 2)}].
func TriggeredMessage(ups []ScaleUp) string {
	parts := make([]string, len(ups))
	for i, u := range ups {
		parts[i] = fmt.Sprintf("{%s %d->%d (max: %d)}", u.Pool, u.From, u.To, u.Max)
	}
	return "pod triggered scale-up: [" + strings.Join(parts, " ") + "]"
}

var triggeredRE = regexp.MustCompile(`\{(\S+) (\d+)->(\d+) \(max: (\d+)\)\}`)

// ParseTriggered reads TriggeredMessage back; ok is false for a message
// in another format.
func ParseTriggered(msg string) (ups []ScaleUp, ok bool) {
	if !strings.HasPrefix(msg, "pod triggered scale-up:") {
		return nil, false
	}
	for _, m := range triggeredRE.FindAllStringSubmatch(msg, -1) {
		from, _ := strconv.Atoi(m[2])
		to, _ := strconv.Atoi(m[3])
		mx, _ := strconv.Atoi(m[4])
		ups = append(ups, ScaleUp{Pool: m[1], From: from, To: to, Max: mx})
	}
	return ups, len(ups) > 0
}

// NotTriggered is why one pool would not grow for a pod.
type NotTriggered struct {
	Pool string
	// Reason is cluster-autoscaler's phrase: MaxSizeReached, the failing
	// scheduler filter's own message on the pool's template node, or
	// InBackoff.
	Reason string
}

// Reasons a pool is not grown, in cluster-autoscaler's words.
const (
	MaxSizeReached = "max node group size reached"
	InBackoff      = "in backoff after failed scale-up"
	NotAutoscaled  = "not autoscaled"
)

// NotTriggeredMessage is a NotTriggerScaleUp event's message:
// cluster-autoscaler's prefix, then each pool and its reason:
// pod didn't trigger scale-up: pool gpu: max node group size reached; pool cpu: 1 node(s) had untolerated taint {gpu: true}
func NotTriggeredMessage(pools []NotTriggered) string {
	if len(pools) == 0 {
		return "pod didn't trigger scale-up: no pool can be scaled up"
	}
	parts := make([]string, len(pools))
	for i, p := range pools {
		parts[i] = "pool " + p.Pool + ": " + p.Reason
	}
	return "pod didn't trigger scale-up: " + strings.Join(parts, "; ")
}

// ParseNotTriggered reads NotTriggeredMessage back.
func ParseNotTriggered(msg string) (pools []NotTriggered, ok bool) {
	rest, ok := strings.CutPrefix(msg, "pod didn't trigger scale-up: ")
	if !ok {
		return nil, false
	}
	for _, part := range strings.Split(rest, "; ") {
		part, ok := strings.CutPrefix(part, "pool ")
		if !ok {
			continue
		}
		name, reason, ok := strings.Cut(part, ": ")
		if ok {
			pools = append(pools, NotTriggered{Pool: name, Reason: reason})
		}
	}
	return pools, true
}

// FormatTime is the status's time, as cluster-autoscaler writes it.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.999999999 -0700 MST") }
