// Package record turns what a live cluster ran into rows of berth's
// trace (internal/rehearse/trace), for `berth record`: pure conversion
// from the API's objects, read by the command, to rows and a summary of
// what could not be recorded and why. Nothing but names, shapes and
// times is read: never a container's image, command, arguments or
// environment, never a Secret.
//
// The mapping, each rule once:
//
//   - A finished Job (Complete or Failed, as it ran) is a training or
//     batch row; one still running or waiting (suspended, as Kueue holds
//     it) is left out and counted. A Deployment or StatefulSet whose pods
//     ask for GPUs is an inference row of its replicas now, running to the
//     end of the trace.
//   - submit is the Job's creationTimestamp (under Kueue the Workload is
//     made after it: the Job's is the true submit; the time it waited for
//     admission is summed in the summary, not written, since a replay
//     queues again).
//   - team: the namespace's team in the blueprint (spec.teams[].namespaces),
//     else the namespace's berth.io/team label; with Options.TeamLabel, the
//     workload's label of that key, else its namespace's. A namespace of no
//     team is reported with its count, never dropped silently.
//   - class: the workload's berth.io/class label (or its pod template's)
//     when the blueprint has that class, else empty (what `berth new`
//     picks).
//   - kind: the app.kubernetes.io/component or berth.io/rehearsal label
//     when it says training or batch; else the class's role (Training:
//     training, any other: batch); else training for a Job with GPUs and
//     batch without.
//   - pods: the Job's parallelism (at most its completions). A Job whose
//     completions differ from its parallelism is reported.
//   - gpus, cpu, memory: one pod's requests (a limit where a container
//     gives no request, as the API server defaults it; init containers and
//     overhead as the scheduler counts them), from the Job's pods, else its
//     template. GPUs are nvidia.com/gpu and the blueprint pools' GPU
//     resources, whole; a fractional GPU (a MIG slice, nvidia.com/mig-*,
//     or a time-sliced share, */gpu.shared) counts as one whole GPU per
//     unit asked, and is reported.
//   - duration: the Job's pod run time shared over its pods: the sum of
//     every pod's run time (from its containers' start to their finish,
//     else the pod's start time and its last condition; failed pods and
//     retries included) divided by pods, rounded up to the second. For a
//     Job whose pods ran once and alike, each pod's run time; the
//     GPU-hours a replay spends are the ones the cluster spent.
//   - With Options.Disruptions (berth record --watch, which records the
//     spot interruptions it sees), a pod a disruption ended (its
//     DisruptionTarget condition, run to the condition plus its grace
//     period) counts only the work its checkpoint saved: the replay ends
//     it again, so the row's duration is the work the Job needed.
//   - checkpoint is the Job's berth.io/checkpoint annotation (a
//     rehearsal's Jobs carry their row's), else empty; model is left
//     empty: the cluster does not say it.
//   - name: the workload's name (made a DNS-1123 label where it is not);
//     with Options.Anonymize, "job-" or "svc-" and the first 10 hex
//     digits of the SHA-256 of NAMESPACE/NAME, stable across recordings.
//     A name that repeats within a team gets "-" and 5 hex digits of its
//     UID's SHA-256.
package record
