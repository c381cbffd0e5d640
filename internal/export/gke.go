package export

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

// GKE limits on a node pool.
const (
	gkeNameMax     = 40
	gkeMaxPodsMin  = 8
	gkeMaxPodsMax  = 256
	gkeWindowsType = "WINDOWS_LTSC_CONTAINERD"
)

var gkeNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

func writeGKE(w io.Writer, bp *v1alpha1.Blueprint) error {
	ps := &problems{bp: bp, target: GKE}
	region, realZones := zoneRegion(gcpZoneRE, bp.Spec.Zones)
	type pool struct {
		name     string
		comments []string
		flags    []option
	}
	var out []pool
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		comments, flags := gkePool(bp, i, p, realZones, ps)
		out = append(out, pool{p.Name, comments, flags})
	}
	if err := ps.err(); err != nil {
		return err
	}

	adds := "Adds the blueprint's node pools to an existing GKE Standard cluster with `gcloud container node-pools create`"
	if len(autoscaled(bp)) > 0 {
		adds += ", then sets the cluster's autoscaling profile with `gcloud container clusters update`"
	}
	head := append(header(bp, GKE), "",
		adds+". The cluster must be VPC-native for --max-pods-per-node.",
		"", "GKE counts --num-nodes per zone; autoscaled pools use --total-min-nodes and --total-max-nodes, which count the whole pool as the blueprint does, and --location-policy "+gkeLocationPolicy+", which spreads their nodes evenly over their zones as the local cluster does.", "")
	if v := bp.Spec.KubernetesVersion; v != "" {
		head = append(head, fmt.Sprintf("Each pool is made at its Kubernetes version (--node-version; spec.kubernetesVersion, %s, unless the pool sets its own). A node pool can never be newer than the control plane, so when spec.kubernetesVersion changes, upgrade the control plane first, then replace each pool blue/green (a new pool at the new version, the workloads moved under their budgets, the old pool deleted), as `berth apply` rehearses it:", v),
			`gcloud container clusters upgrade "$CLUSTER_NAME" --location "$LOCATION" \`,
			"  --master --cluster-version "+strings.TrimPrefix(v, "v"), "")
	}
	location := variable{name: "LOCATION", help: "The cluster's region (regional cluster) or zone (zonal cluster)."}
	switch {
	case realZones:
		location.def = region
		head = append(head, fmt.Sprintf("Zones: the blueprint's zones are Compute Engine zones in %s, so each pool gets --node-locations.", region))
	case defaultZones(bp):
		head = append(head, "The blueprint names no zones of its own (only berth's default zone-1), so the pools use the cluster's node locations.")
	default:
		head = append(head, fmt.Sprintf("Zones: the blueprint's zones (%s) are not Compute Engine zones, so no pool gets --node-locations: they use the cluster's node locations, assumed to be as many zones as each pool lists. Name real zones such as us-central1-a in spec.zones to pin the pools.", strings.Join(bp.Spec.Zones, ", ")))
	}
	s := newScript(w, head, []variable{
		{name: "CLUSTER_NAME", def: bp.Metadata.Name, help: "The GKE cluster to add the pools to."},
		location,
	})
	for _, p := range out {
		s.command(p.comments, "gcloud container node-pools create "+p.name, p.flags)
	}
	writeGKEProfile(s, bp)
	return writeStorageClasses(s.w, bp, GKE)
}

func gkePool(bp *v1alpha1.Blueprint, i int, p *v1alpha1.Pool, realZones bool, ps *problems) ([]string, []option) {
	path := poolPath(i)
	sz := poolSize(p)
	comments := []string{poolSummary(p, sz)}
	if !gkeNameRE.MatchString(p.Name) || len(p.Name) > gkeNameMax {
		ps.add(p.Name, path+".name", fmt.Sprintf("GKE names node pools with up to %d lower-case letters, digits and '-', starting with a letter", gkeNameMax), "rename the pool")
	}
	if p.MaxPods < gkeMaxPodsMin || p.MaxPods > gkeMaxPodsMax {
		ps.add(p.Name, path+".maxPods", fmt.Sprintf("GKE allows %d to %d pods per node, not %d", gkeMaxPodsMin, gkeMaxPodsMax, p.MaxPods), fmt.Sprintf("set maxPods between %d and %d", gkeMaxPodsMin, gkeMaxPodsMax))
	}
	if p.Mode == v1alpha1.ModeSystem {
		comments = append(comments, "GKE has no System node pools: it runs its add-ons on any pool whose taints they tolerate. This is a regular node pool with the blueprint's taints.")
	}

	m, prob := resolveMachine(i, p, gcp)
	if prob != nil {
		ps.list = append(ps.list, *prob)
	}
	comments = append(comments, m.Notes...)
	flags := []option{
		rawFlag("--cluster", `"$CLUSTER_NAME"`),
		rawFlag("--location", `"$LOCATION"`),
		one("--machine-type", m.Type),
	}
	if v := p.KubernetesVersion; v != "" {
		flags = append(flags, one("--node-version", strings.TrimPrefix(v, "v")))
	}
	if p.OS == v1alpha1.Windows {
		flags = append(flags, one("--image-type", gkeWindowsType))
		if p.Machine.GPU != nil {
			ps.add(p.Name, path+".machine.gpu", "GKE runs GPUs on Linux nodes only", "make the pool os: Linux, or remove its GPUs")
		}
	}
	if g := p.Machine.GPU; g != nil {
		accel, count := parseGPUProduct(g.Product).gkeAccelerator(), g.Count
		if m.Known != nil && m.Known.GPUs > 0 {
			accel, count = m.Known.Accelerator, m.Known.GPUs
		}
		if accel == "" && prob == nil {
			ps.add(p.Name, path+".machine.gpu.product", fmt.Sprintf("berth knows no GKE accelerator type for GPU product %q", g.Product),
				"write the product as NVIDIA's feature discovery does (NVIDIA-L4, Tesla-T4, NVIDIA-A100-SXM4-40GB, NVIDIA-A100-SXM4-80GB, NVIDIA-H100-80GB-HBM3), or pick a machine type from the catalog")
		}
		flags = append(flags, one("--accelerator", fmt.Sprintf("type=%s,count=%d,gpu-driver-version=default", accel, count)))
		comments = append(comments, "gpu-driver-version=default has GKE install the NVIDIA driver and device plugin.")
		if !hasTaintKey(p, v1alpha1.TaintNVIDIAGPU) {
			comments = append(comments, "GKE also taints GPU nodes nvidia.com/gpu=present:NoSchedule; pods that request GPUs get a toleration for it automatically, other pods stay off.")
		}
	}
	if p.Capacity == v1alpha1.Spot {
		flags = append(flags, bare("--spot"))
		comments = append(comments, "GKE labels Spot nodes cloud.google.com/gke-spot=true and taints them with nothing: the blueprint's taints are what keep other pods off.")
	}

	zones := int32(len(p.Zones))
	perZone := (sz.Initial + zones - 1) / zones
	if sz.Autoscaled {
		perZone = (sz.Min + zones - 1) / zones
		if perZone*zones > sz.Max {
			perZone = sz.Max / zones
		}
		flags = append(flags, one("--num-nodes", strconv.Itoa(int(perZone))), bare("--enable-autoscaling"),
			one("--total-min-nodes", strconv.Itoa(int(sz.Min))), one("--total-max-nodes", strconv.Itoa(int(sz.Max))),
			one("--location-policy", gkeLocationPolicy))
	} else {
		flags = append(flags, one("--num-nodes", strconv.Itoa(int(perZone))))
	}
	switch {
	case perZone*zones == sz.Initial:
	case sz.Autoscaled:
		comments = append(comments, fmt.Sprintf("--num-nodes is per zone: %d in each of %d zones starts the pool with %d nodes where the blueprint starts it with %d; the autoscaler keeps it between %d and %d.", perZone, zones, perZone*zones, sz.Initial, sz.Min, sz.Max))
	default:
		comments = append(comments, fmt.Sprintf("--num-nodes is per zone and %d nodes do not spread evenly over %d zones: %d in each gives the pool %d nodes, not %d.", sz.Initial, zones, perZone, perZone*zones, sz.Initial))
	}
	if realZones {
		flags = append(flags, one("--node-locations", strings.Join(p.Zones, ",")))
	}
	flags = append(flags, one("--max-pods-per-node", strconv.Itoa(int(p.MaxPods))))
	labels := nodeLabels(bp, p, labelSet{noGPUProduct: m.Substituted})
	flags = append(flags, one("--node-labels", strings.Join(labelPairs(labels), ",")))
	if taints := gkeTaints(i, p, ps); len(taints) > 0 {
		flags = append(flags, one("--node-taints", strings.Join(taints, ",")))
	}
	return comments, flags
}

// gkeTaints are the pool's taints as --node-taints takes them:
// KEY=VALUE:EFFECT, one per key, since gcloud reads the flag as a map.
func gkeTaints(i int, p *v1alpha1.Pool, ps *problems) []string {
	var out []string
	seen := map[string]bool{}
	for j, t := range p.NodeTaints() {
		if seen[t.Key] {
			ps.add(p.Name, fmt.Sprintf("%s.taints[%d]", poolPath(i), j), fmt.Sprintf("gcloud takes one taint per key, and key %q has two", t.Key), "keep one taint per key in this pool")
			continue
		}
		seen[t.Key] = true
		out = append(out, t.Key+"="+t.Value+":"+string(t.Effect))
	}
	return out
}
