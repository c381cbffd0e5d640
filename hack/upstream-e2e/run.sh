#!/usr/bin/env bash
# Runs upstream Kubernetes' own e2e specs, from k8s.io/kubernetes/test/e2e at
# the version berth embeds, against a local `berth up` cluster: the retail
# template with two GPU nodes.
#
#   hack/upstream-e2e/run.sh core        scheduling, preemption, LimitRange,
#                                        ResourceQuota, taint eviction, disruption
#   hack/upstream-e2e/run.sh workloads   Job, Deployment, ReplicaSet, DaemonSet,
#                                        CronJob, StatefulSet
#   hack/upstream-e2e/run.sh list-core|list-workloads
#                                        print the selected specs, run nothing
#
# Extra arguments go to the e2e binary (e.g. --ginkgo.focus to narrow further).
# GUARDRAILS=Warn (or Audit, Off) runs the blueprint with that guardrails mode:
# upstream's specs create priority classes and use them in namespaces the
# blueprint does not know, which berth's priority ceiling refuses by design.
# Needs Go, kubectl and jq; no make, no container runtime. Everything it writes
# (binaries, cluster state, logs, JUnit reports) goes under $OUT (default
# hack/upstream-e2e/_output); the cluster is deleted when it ends. The e2e
# binary is built from this directory's own go.mod, with the same k8s.io
# staging replaces as berth's, so `go test ./...` in berth never builds it.
# It takes tens of minutes and is not part of CI.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$here/_output}
mode=${1:-core}
shift || true
mkdir -p "$out"

# What each suite selects, and what it leaves out because it needs a part of
# a node that KWOK's simulated kubelets do not have. Each skip, and why:
#   Async                   SchedulerPredicates' async-preemption variants need
#                           the SchedulerAsyncPreemption gate, off by default
#   hostPort                host ports are bound by a real kubelet and CNI
#   ephemeral storage       needs a kubelet that measures and evicts on disk use
#   PVC|persistent volume   volumes need a storage provisioner and attach/mount
#   VolumeAttributesClass   (same)
#   DRA                     dynamic resource allocation needs a DRA driver
#   Flaky                   upstream's own label for specs it does not trust
core_focus='\[sig-scheduling\] SchedulerPredicates|\[sig-scheduling\] SchedulerPreemption|\[sig-scheduling\] LimitRange|\[sig-api-machinery\] ResourceQuota|NoExecuteTaintManager|\[sig-apps\] DisruptionController'
core_skip='Async|hostPort|ephemeral storage|PVC|persistent volume|DRA|VolumeAttributesClass|Flaky'

# The workload controllers' specs that need no container runtime (upstream
# names the DaemonSet specs "Daemon set"). Besides
# the skips above, each of these leaves out specs whose pods must do what only
# a real container does:
#   Deploy clustered applications   run zookeeper, mysql, CockroachDB on volumes
#   serve a basic image             reach each replica over the pod network
#   cloud load-balancer             need a cloud load balancer
#   StatefulSetBasic|StatefulSetStartOrdinal
#                                   the StatefulSet specs mount per-pod volumes
#                                   (PVC templates), and most exec into pods to
#                                   break and restore their readiness probe
#   sometimes fail|failure policy|fail|exit code|FailIndex|backoffLimit|...
#   (the list below)
#                                   Job and CronJob specs whose pods must exit
#                                   non-zero or keep running for a while: KWOK
#                                   completes every Job pod at once, exit code 0
#   OffByDefault|ContainerRestartRules
#                                   alpha gates berth leaves off, and container
#                                   restarts
workloads_focus='\[sig-apps\] (Job|Deployment|ReplicaSet|DaemonSet|Daemon set|CronJob|StatefulSet)'
workloads_skip="$core_skip"'|Deploy clustered applications|serve a basic image|cloud load-balancer|StatefulSetBasic|StatefulSetStartOrdinal|sometimes fail|failure policy|fail the job|fail to exceed|fail when|have failed|failing|failed finished|failed indexes|exit code|FailIndex|backoffLimit|active deadline|suspended|remain pending|ready field|deleted|Concurrent|concurrently|OffByDefault|ContainerRestartRules'

case "$mode" in
core | list-core) focus=$core_focus skip=$core_skip suite=core ;;
workloads | list-workloads) focus=$workloads_focus skip=$workloads_skip suite=workloads ;;
*)
	echo "usage: $0 core|workloads|list-core|list-workloads [e2e.test flags]" >&2
	exit 2
	;;
esac

# The binary depends on nothing but go.mod and go.sum (every module is
# pinned), so it is rebuilt only when they change. Built to a temporary name:
# another suite may be running the old one.
if [[ ! -x $out/e2e.test || $here/go.mod -nt $out/e2e.test || $here/go.sum -nt $out/e2e.test ]]; then
	echo "== building the upstream e2e binary (k8s.io/kubernetes/test/e2e; the first build takes many minutes)"
	(cd "$here" && go test -c -vet=off -o "$out/e2e.test.new" \
		-ldflags "-X k8s.io/component-base/version.gitVersion=v1.36.3" \
		k8s.io/kubernetes/test/e2e)
	mv "$out/e2e.test.new" "$out/e2e.test"
fi

if [[ $mode == list-* ]]; then
	"$out/e2e.test" --ginkgo.dry-run --ginkgo.v --ginkgo.no-color \
		--ginkgo.focus="$focus" --ginkgo.skip="$skip" "$@" |
		grep -E '^\[sig-|^Ran [0-9]+ of' || true
	exit 0
fi

# Runs with another guardrails mode get their own cluster and log.
suite=$suite${GUARDRAILS:+-guardrails-$GUARDRAILS}
echo "== building berth"
(cd "$root" && go build -o "$out/berth-$suite" ./cmd/berth)

# One cluster per suite, so both suites can run at once.
name=upstream-e2e-$suite
state=$out/cluster-$suite
# berth up adds a context to the user's kubeconfig; keep it in $OUT.
export KUBECONFIG=$out/user-$suite.kubeconfig BERTH_HOME=$out/home
berth() { "$out/berth-$suite" "$@"; }
berth down --name "$name" --state-dir "$state" --purge >/dev/null 2>&1 || true
trap 'berth down --name "$name" --state-dir "$state" --purge || true' EXIT

echo "== berth up: the retail template, --nodes gpu=2${GUARDRAILS:+, guardrails: $GUARDRAILS}"
berth init --template retail --force "$out/retail-$suite.yaml"
if [[ -n ${GUARDRAILS:-} ]]; then
	sed -i "s/^spec:\$/spec:\n  guardrails: $GUARDRAILS/" "$out/retail-$suite.yaml"
	berth validate "$out/retail-$suite.yaml"
fi
berth up -f "$out/retail-$suite.yaml" --name "$name" --state-dir "$state" --nodes gpu=2 --detach
kubeconfig=$state/kubeconfig

# The pools' taints keep the framework's "all nodes schedulable" check from
# waiting on nodes that only tolerating pods may use.
taints=$(kubectl --kubeconfig "$kubeconfig" get nodes -o json |
	jq -r '[.items[].spec.taints[]?.key | select(startswith("node.kubernetes.io/") | not)] + ["node-role.kubernetes.io/control-plane"] | unique | join(",")')
echo "== non-blocking taints: $taints"

log=$out/$suite.log
report=$out/report-$suite
mkdir -p "$report"
echo "== running the $suite specs (log: $log)"
started=$(date +%s)
set +e
"$out/e2e.test" --kubeconfig="$kubeconfig" --provider=skeleton \
	--non-blocking-taints="$taints" --report-dir="$report" \
	--ginkgo.focus="$focus" --ginkgo.skip="$skip" \
	--ginkgo.timeout=4h --ginkgo.no-color --ginkgo.v "$@" >"$log" 2>&1
rc=$?
set -e
echo "== $suite: $(($(date +%s) - started)) s, exit $rc"
grep -E '^Ran [0-9]+ of|Passed \|' "$log" || true
grep -E '^\s*\[FAIL\]' "$log" | sort -u || true
exit $rc
