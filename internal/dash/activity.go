package dash

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler/castatus"
	"berth.io/berth/internal/status/hpastatus"
)

// Kinds of activity.
const (
	KindScaleUp    = "scale-up"
	KindNoScaleUp  = "no-scale-up"
	KindScaleDown  = "scale-down"
	KindBlocked    = "blocked"
	KindSpot       = "spot-interruption"
	KindEviction   = "eviction"
	KindPreemption = "preemption"
	KindRescale    = "hpa-rescale"
)

// reasonSpotInterruption is the event the spot controller writes on a
// node it reclaims and on each of its pods.
const reasonSpotInterruption = "SpotInterruption"

// kindOf is the activity an event's reason records; "" for an event
// the timeline leaves out.
var kindOf = map[string]string{
	castatus.ReasonTriggeredScaleUp:   KindScaleUp,
	castatus.ReasonScaledUpGroup:      KindScaleUp,
	castatus.ReasonNotTriggerScaleUp:  KindNoScaleUp,
	castatus.ReasonFailedScaleUp:      KindNoScaleUp,
	castatus.ReasonScaleUpTimedOut:    KindNoScaleUp,
	castatus.ReasonScaleDown:          KindScaleDown,
	castatus.ReasonScaleDownEmpty:     KindScaleDown,
	castatus.ReasonScaleDownFailed:    KindBlocked,
	castatus.ReasonNoScaleDown:        KindBlocked,
	reasonSpotInterruption:            KindSpot,
	"Evicted":                         KindEviction,
	"Preempted":                       KindPreemption,
	hpastatus.ReasonSuccessfulRescale: KindRescale,
}

// maxActivity is how many entries the timeline keeps, newest first.
const maxActivity = 500

// Entry is one thing that happened.
type Entry struct {
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	Pool      string    `json:"pool,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	// Object is KIND/NAME of what it happened to.
	Object  string `json:"object"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Count is how many times the event was seen.
	Count int32 `json:"count,omitempty"`
}

// activity is the timeline, newest first: the autoscaler's record of
// each pool's last scale-up and scale-down, the spot interruptions
// recorded, and the events of the kinds above (a blocked scale-down is
// its NoScaleDown event: the status's list of blockers carries no time of
// its own).
func activity(v *View, events corelisters.EventLister, nodes corelisters.NodeLister) []Entry {
	var out []Entry
	if a := v.Status.Autoscaler; a != nil {
		for _, p := range a.Pools {
			for _, e := range []*castatus.Event{p.LastScaleUp, p.LastScaleDown} {
				if e == nil {
					continue
				}
				kind := KindScaleUp
				if e.To < e.From {
					kind = KindScaleDown
				}
				out = append(out, Entry{Time: e.Time.Time, Kind: kind, Pool: p.Name, Object: "pool/" + p.Name, Reason: "autoscaler",
					Message: fmt.Sprintf("%d → %d nodes: %s", e.From, e.To, e.Reason)})
			}
		}
	}
	for _, in := range v.Status.Interruptions {
		out = append(out, Entry{Time: in.At.Time, Kind: KindSpot, Pool: in.Pool, Object: "node/" + in.Node, Reason: "spot",
			Message: fmt.Sprintf("zone %s, notice %s, %d pod(s)", in.Zone, in.Notice, in.Pods)})
	}
	if events != nil {
		list, _ := events.List(labels.Everything())
		for _, ev := range list {
			kind := kindOf[ev.Reason]
			if kind == "" {
				continue
			}
			// A scale-down's event on a pod is the pod's eviction.
			if kind == KindScaleDown && ev.InvolvedObject.Kind == "Pod" {
				kind = KindEviction
			}
			out = append(out, Entry{Time: eventTime(ev), Kind: kind, Pool: eventPool(ev, nodes), Namespace: ev.InvolvedObject.Namespace,
				Object: strings.ToLower(ev.InvolvedObject.Kind) + "/" + ev.InvolvedObject.Name, Reason: ev.Reason, Message: ev.Message, Count: ev.Count})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.After(out[j].Time)
		}
		return out[i].Object < out[j].Object
	})
	if len(out) > maxActivity {
		out = out[:maxActivity]
	}
	return out
}

// filterActivity keeps the entries of pool and namespace ("" for any).
func filterActivity(in []Entry, pool, namespace string) []Entry {
	out := []Entry{}
	for _, e := range in {
		if (pool == "" || e.Pool == pool) && (namespace == "" || e.Namespace == namespace) {
			out = append(out, e)
		}
	}
	return out
}

func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// eventPool is the pool an event is about: the pool a scale-up grows,
// or the pool of the node it names.
func eventPool(ev *corev1.Event, nodes corelisters.NodeLister) string {
	if ev.Reason == castatus.ReasonTriggeredScaleUp {
		if ups, ok := castatus.ParseTriggered(ev.Message); ok && len(ups) > 0 {
			return ups[0].Pool
		}
	}
	if m := groupInMessage.FindStringSubmatch(ev.Message); m != nil {
		return m[1]
	}
	if ev.InvolvedObject.Kind == "Node" && nodes != nil {
		if n, err := nodes.Get(ev.InvolvedObject.Name); err == nil {
			return n.Labels[v1alpha1.LabelPool]
		}
	}
	return ""
}

// groupInMessage finds the pool in the autoscaler's events on its status
// ConfigMap: "Scale-up: setting group spot-gpu size to 1 instead of 0".
var groupInMessage = regexp.MustCompile(`\bgroup (\S+) size\b`)

// activityChoices are the pools and namespaces the filter offers.
func activityChoices(entries []Entry) (pools, namespaces []string) {
	p, n := map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		if e.Pool != "" && !p[e.Pool] {
			p[e.Pool] = true
			pools = append(pools, e.Pool)
		}
		if e.Namespace != "" && !n[e.Namespace] {
			n[e.Namespace] = true
			namespaces = append(namespaces, e.Namespace)
		}
	}
	sort.Strings(pools)
	sort.Strings(namespaces)
	return pools, namespaces
}
