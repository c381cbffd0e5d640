// Package upstream holds what berth takes from upstream components that
// their APIs do not export: values copied from their code (here), the
// Job controller's constructor that takes a clock (job), and the HPA
// controller with berth's patch (podautoscaler). Each is checked by a
// test against the module berth builds against, so that a version bump
// that changes one fails a test rather than a rehearsal.
package upstream

import "time"

// StalePodDisruptionTimeout is how long the disruption controller lets a
// pod an eviction approved count as disrupted before it counts it again
// (k8s.io/kubernetes pkg/controller/disruption, stalePodDisruptionTimeout,
// which NewDisruptionController passes and NewDisruptionControllerInternal
// takes).
const StalePodDisruptionTimeout = 2 * time.Minute

// UnschedulableFlushPeriod is how often the scheduler's queue sends back
// to be tried the pods left unschedulable longer than its maximum
// (k8s.io/kubernetes pkg/scheduler/backend/queue, PriorityQueue.Run: a
// literal, on the wall clock).
const UnschedulableFlushPeriod = 30 * time.Second
