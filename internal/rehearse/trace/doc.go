// Package trace is the workload `berth rehearse` replays: berth's own
// trace format in its two forms (CSV and YAML), its reader, its check
// against a blueprint, its CSV writer, and importers of three public GPU
// cluster traces. It is pure: no cluster, no command line.
//
// # The CSV form
//
// The header is exactly
//
//	submit,team,kind,name,pods,gpus,cpu,memory,duration,checkpoint,class,model
//
// and each row below it is a job:
//
//   - submit: when the job is submitted, as an offset from the trace's
//     start (a Go duration: 0s, 90s, 2h30m) or as a time (RFC 3339:
//     2026-01-05T09:00:00Z).
//   - team: a team of the blueprint. The job runs in its first namespace.
//   - kind: training, batch or inference. A training or batch row is a
//     Job of `pods` pods that each run `duration` once started. An
//     inference row is a service (a Deployment) of at least `pods`
//     replicas, from submit for `duration`, or to the end of the trace
//     when duration is empty.
//   - name: a DNS-1123 label, unique among the team's rows.
//   - pods: the parallelism, 1 or more.
//   - gpus, cpu, memory: each pod's requests, as Kubernetes quantities.
//     GPUs are whole (empty is none); an empty cpu or memory is what
//     `berth new` asks for a pod of the kind.
//   - duration: each pod's run time (a Go duration). Required for
//     training and batch.
//   - checkpoint: how often a training or batch pod saves its work, less
//     than duration: an interruption loses the work since the last
//     checkpoint. Empty for none, when an interruption loses it all.
//   - class: the blueprint class. Empty for the class `berth new` picks
//     for the kind and team.
//   - model: NAME@ALIAS or NAME:VERSION, for an inference row that follows
//     a model of the registry. Empty for none.
//
// Lines starting with # are comments. One says when the trace starts,
// above the header: "# start: 2026-01-05T00:00:00Z".
//
// # The YAML form
//
// The same jobs, as a Kubernetes-style document that can also carry the
// traffic and queues of a `berth load play` profile, and spot
// interruptions at given times:
//
//	apiVersion: berth.io/v1alpha1
//	kind: Trace
//	spec:
//	  start: 2026-01-05T00:00:00Z      # optional
//	  jobs:
//	  - {submit: 0s, team: ml, kind: inference, name: reco, pods: 2, gpus: 1}
//	  - {submit: 1h, team: ml, kind: training, name: bert, pods: 4, gpus: 1, duration: 6h, checkpoint: 30m}
//	  load:                            # a `berth load play` profile, its times offsets
//	    steps:
//	    - {at: 0s, workloads: [{namespace: ml, name: reco, rps: 40}]}
//	    - {at: 2h, queues: {images: 100}}
//	  queues:                          # how long a worker takes over an item
//	  - {name: images, itemTime: 30s, team: ml, class: batch}
//	  interruptions:                   # spot capacity taken away
//	  - {at: 40m, pool: spot-gpu}
//	  drains:                          # a pool's nodes replaced
//	  - {at: 2h, pool: cpu}
//
// A queue with a team has a worker from the trace's start: the
// Deployment and HPA `berth new batch images-worker --team ml [--class
// batch]` writes, scaled on the queue's depth (to zero once it stays
// empty). A class that drains a queue of its own (scaling.queue) must
// name this one; another gets `--queue` for it. Without a team the queue
// drains only as workers the trace does not make run.
//
// An interruption gives every node of a Spot pool up at its time (an
// offset, in order) the pool's spot notice, as `berth spot interrupt
// --pool` does: the pods are told to stop and fail when the notice ends,
// and the nodes go. It is how a trace asks what a design does with work
// that loses its node at a known moment (the checkpoints, the pod failure
// policy, the autoscaler's new node); a pool's
// spot.meanTimeBetweenInterruptions makes random ones besides. The CSV
// form holds jobs only, so its header stays the same: a trace with
// interruptions is written in YAML.
//
// A drain replaces every node of a pool up at its time as berth
// replaces a pool's nodes: all cordoned, then each drained through the
// Eviction API (budgets hold pods back until their replacements run
// elsewhere) and deleted; the autoscaler adds the nodes that are needed.
// It asks whether a design's budgets keep its services up through a node
// upgrade or a blue/green replacement.
//
// Decoding is strict, as a blueprint's is: an unknown field, or one
// written twice, is a problem at its line. The load's services must be
// the trace's inference rows, in their teams' first namespaces; a queue
// the load fills and spec.queues does not list never drains.
//
// # Offsets and times
//
// A trace that says its start (spec.start, or the # start: comment) may
// write each submit as an offset from it or as a time at or after it. A
// trace that does not must write every submit the same way: all offsets
// (the trace then has no date), or all times (it starts at the first).
//
// # Problems
//
// Read, Parse, Check and the importers report every problem of a file in
// one pass, as a problem.List: each at FILE:LINE, with the column (or
// the YAML field path) at fault and the fix.
//
// # Alibaba's cluster-trace-gpu-v2020
//
// ImportAlibaba reads pai_job_table and pai_task_table as published
// (CSV without a header row). Of pai_job_table it reads job_name, user
// (the job's owner, mapped to a team by ImportOptions.TeamMap) and
// start_time (the submission); of pai_task_table, job_name, task_name,
// inst_num, start_time, end_time, plan_cpu, plan_mem and plan_gpu. Each
// task becomes a job: named JOB-TASK, submitted when its job was, of
// inst_num pods, that run from the task's start_time to its end_time.
// plan_cpu is percent of a core (600 is 6 CPUs); plan_mem is GiB;
// plan_gpu is percent of a GPU, rounded up to whole GPUs per pod because
// Kubernetes gives GPUs whole: a pod that asked for half a GPU holds a
// whole one, as it would on a cluster without GPU sharing (the report
// counts them). Times are seconds, read as Unix time in UTC+8, where the
// trace keeps their hour and weekday. Not read: inst_id, status (a task
// that ran is replayed whether it ended Terminated or Failed), gpu_type,
// and the other tables. Dropped: tasks of jobs pai_job_table lacks or
// gives no submission time, and tasks without a start or an end (still
// running or waiting when the trace was taken; a time of 0 is none).
//
// # Microsoft's Philly trace
//
// ImportPhilly reads cluster_job_log (a JSON list of jobs). Of each job
// it reads jobid (the name, made a DNS-1123 label), vc (the virtual
// cluster, mapped to a team by ImportOptions.TeamMap), submitted_time,
// and attempts: the run time is the sum of the attempts' end_time less
// start_time (a failed attempt used the GPUs too; the waits between
// attempts are berth's to measure), and the pods and GPUs are the first
// complete attempt's machines (detail): a pod per machine, the GPUs
// spread evenly over them and rounded up. The log's times have no zone
// and are read as UTC. Not read: status, user, ip. Dropped: jobs whose
// last attempt has no end_time (running when the log was taken), whose
// attempts all lack a start or an end, or that record no machine.
//
// # Alibaba's cluster-trace-gpu-v2023 (openb)
//
// ImportOpenB reads an openb_pod_list_*.csv as published (CSV with a
// header row: name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec,
// qos, pod_phase, creation_time, deletion_time, scheduled_time). Each pod
// becomes a job of one pod, named by name, of the team that
// ImportOptions.TeamMap gives its qos (LS, BE, Burstable, Guaranteed),
// submitted at creation_time, that runs from scheduled_time to
// deletion_time.
// cpu_milli is thousandths of a core, memory_mib MiB (0 is none: what
// `berth new` asks); num_gpu is whole GPUs, and a GPU-sharing pod's
// gpu_milli (thousandths of its one GPU) is rounded up to the whole GPU,
// as for Alibaba's 2020 trace (the report counts them). The times are
// seconds from the trace's start, not dates: the window is
// ImportOptions.Offset and For, and the trace has no date. Each pod's
// own queueing delay on Alibaba's cluster, scheduled_time less
// creation_time, is kept in Trace.RecordedWaits. Not read: gpu_spec
// (the blueprint's classes choose the GPUs), pod_phase (a pod with a
// scheduled and a deletion time is replayed between them, whatever its
// phase). Dropped: pods never scheduled or never deleted (an empty time
// is none; 0 is the trace's start), and pods deleted as they were
// scheduled. The lists published without times (multigpu) are refused.
//
// # What every importer does
//
// The importers drop jobs of owners TeamMap lacks (unless DefaultTeam
// is given), jobs submitted outside the window (From and To, or For
// after From; Offset and For for openb), and jobs whose pods ask more
// GPUs than ImportOptions.MaxGPUs, and count all they drop in an
// ImportReport. What the sources do not record is left empty: Philly's
// CPU and memory (what `berth new` asks), checkpoints (none, unless
// ImportOptions.Checkpoint), classes (the one `berth new` picks); every
// job is of ImportOptions.Kind, training unless told.
//
// # Recorded waits
//
// A source that records how long each job waited before it started
// (openb) gives a trace RecordedWaits: the wait on the cluster the trace
// came from, for a report to set beside the rehearsal's. Neither form
// holds them, so berth's CSV header stays the same: `berth rehearse
// import` writes them beside TRACE.csv as TRACE.waits.csv (WaitsPath),
// with the header
//
//	name,team,recorded_wait
//
// and a row per job, the wait a Go duration (WriteWaits); ReadWaits puts
// them back onto the trace read from TRACE.csv.
package trace
