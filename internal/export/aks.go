package export

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

// AKS limits that `az aks nodepool add` or the AKS API enforce.
const (
	aksNameMax        = 12
	aksWindowsNameMax = 6
	aksMaxPodsMin     = 10
	aksMaxPodsMax     = 250
	aksSystemMaxPods  = 30
	aksNodesMax       = 1000
	// aksSpotTaint is the taint AKS puts on every Spot node.
	aksSpotTaint = v1alpha1.LabelAKSPriority + "=spot:NoSchedule"
)

var (
	aksNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	// aksTaintRE is the Azure CLI's own check of a --node-taints entry: a
	// taint must have a value.
	aksTaintRE = regexp.MustCompile(`^[a-zA-Z\d][\w\-\.\/]{0,252}=[a-zA-Z\d][\w\-\.]{0,62}:(NoSchedule|PreferNoSchedule|NoExecute)$`)
)

func writeAKS(w io.Writer, bp *v1alpha1.Blueprint) error {
	ps := &problems{bp: bp, target: AKS}
	zones, zoneNote := aksZones(bp, ps)
	owners := map[string]string{} // AKS pool name -> blueprint pool name
	type pool struct {
		comments []string
		flags    []option
	}
	var out []pool
	for i := range bp.Spec.Pools {
		p := &bp.Spec.Pools[i]
		comments, flags := aksPool(bp, i, p, zones, owners, ps)
		out = append(out, pool{comments, flags})
	}
	if err := ps.err(); err != nil {
		return err
	}

	adds := "Adds the blueprint's node pools to an existing AKS cluster with `az aks nodepool add`"
	if len(autoscaled(bp)) > 0 {
		adds += ", then gives the cluster the blueprint's node autoscaler profile (spec.autoscaler) with `az aks update --cluster-autoscaler-profile`"
	}
	head := append(header(bp, AKS), "",
		adds+". Create the cluster first: `az aks create` makes a first System pool (nodepool1) that you can remove with `az aks nodepool delete` once these pools are ready.",
		"", zoneNote)
	if len(autoscaled(bp)) == 0 {
		head = append(head, "", "No pool autoscales, so the node autoscaler's profile (spec.autoscaler) is not set.")
	}
	if v := bp.Spec.KubernetesVersion; v != "" {
		head = append(head, "", fmt.Sprintf("Each pool is made at its Kubernetes version (--kubernetes-version; spec.kubernetesVersion, %s, unless the pool sets its own). A node pool can never be newer than the control plane, so when spec.kubernetesVersion changes, upgrade the control plane alone first, then replace each pool blue/green (a new pool at the new version, the workloads moved under their budgets, the old pool deleted), as `berth apply` rehearses it:", v),
			`az aks upgrade --resource-group "$RESOURCE_GROUP" --name "$CLUSTER_NAME" \`,
			"  --control-plane-only --kubernetes-version "+strings.TrimPrefix(v, "v"))
	}
	s := newScript(w, head, append([]variable{
		{name: "RESOURCE_GROUP", help: "The resource group that holds the cluster."},
		{name: "CLUSTER_NAME", def: bp.Metadata.Name, help: "The AKS cluster to add the pools to."},
	}, aksVariables(bp)...))
	for _, p := range out {
		s.command(p.comments, "az aks nodepool add", p.flags)
	}
	if err := writeAKSProfile(s, bp); err != nil {
		return err
	}
	return writeStorageClasses(s.w, bp, AKS)
}

// aksPool is one pool's comments and flags; what AKS cannot express goes
// to ps.
func aksPool(bp *v1alpha1.Blueprint, i int, p *v1alpha1.Pool, zones map[string]int, owners map[string]string, ps *problems) ([]string, []option) {
	path := poolPath(i)
	sz := poolSize(p)
	name, comments := aksPoolName(i, p, owners, ps)
	comments = append([]string{poolSummary(p, sz)}, comments...)

	if p.Mode == v1alpha1.ModeSystem {
		if p.OS != v1alpha1.Linux {
			ps.add(p.Name, path+".os", "an AKS System pool must run Linux", "set os: Linux, or mode: User")
		}
		if sz.Min < 1 {
			f := path + ".count"
			if sz.Autoscaled {
				f = path + ".autoscale.min"
			}
			ps.add(p.Name, f, "an AKS System pool must keep at least one node", "set it to 1 or more, or make the pool mode: User")
		}
		if p.Capacity == v1alpha1.Spot {
			ps.add(p.Name, path+".capacity", "an AKS System pool cannot use Spot VMs: Azure may take them away, and the cluster's add-ons live there", "set capacity: OnDemand, or make the pool mode: User")
		}
		if p.MaxPods < aksSystemMaxPods {
			ps.add(p.Name, path+".maxPods", fmt.Sprintf("an AKS System pool needs room for at least %d pods per node, this one has %d", aksSystemMaxPods, p.MaxPods), fmt.Sprintf("set maxPods to %d or more", aksSystemMaxPods))
		}
	}
	if p.MaxPods < aksMaxPodsMin || p.MaxPods > aksMaxPodsMax {
		ps.add(p.Name, path+".maxPods", fmt.Sprintf("AKS allows %d to %d pods per node, not %d", aksMaxPodsMin, aksMaxPodsMax, p.MaxPods), fmt.Sprintf("set maxPods between %d and %d", aksMaxPodsMin, aksMaxPodsMax))
	}
	if sz.Max > aksNodesMax {
		ps.add(p.Name, path, fmt.Sprintf("an AKS node pool holds at most %d nodes, this one up to %d", aksNodesMax, sz.Max), "split the pool in two")
	}

	m, prob := resolveMachine(i, p, azure)
	if prob != nil {
		ps.list = append(ps.list, *prob)
	}
	comments = append(comments, m.Notes...)

	flags := []option{
		rawFlag("--resource-group", `"$RESOURCE_GROUP"`),
		rawFlag("--cluster-name", `"$CLUSTER_NAME"`),
		one("--name", name),
		one("--mode", string(p.Mode)),
		one("--os-type", string(p.OS)),
		one("--node-vm-size", m.Type),
		one("--node-count", strconv.Itoa(int(sz.Initial))),
	}
	if v := p.KubernetesVersion; v != "" {
		flags = append(flags, one("--kubernetes-version", strings.TrimPrefix(v, "v")))
	}
	if sz.Autoscaled {
		flags = append(flags, bare("--enable-cluster-autoscaler"),
			one("--min-count", strconv.Itoa(int(sz.Min))), one("--max-count", strconv.Itoa(int(sz.Max))))
	}
	taints := aksTaints(i, p, ps)
	if p.Capacity == v1alpha1.Spot {
		flags = append(flags, one("--priority", "Spot"), one("--eviction-policy", "Delete"), one("--spot-max-price", "-1"))
		if !hasTaint(taints, aksSpotTaint) {
			taints = append(taints, aksSpotTaint)
			comments = append(comments, fmt.Sprintf("AKS taints every Spot node %s; it is passed here so that the script says what the nodes get. Pods need a toleration for it, which berth only injects for the blueprint's own taints: add it to %s.taints.", aksSpotTaint, path))
		}
	}
	if nums := poolZoneNumbers(p, zones); len(nums) > 0 {
		flags = append(flags, many("--zones", nums...))
	}
	flags = append(flags, one("--max-pods", strconv.Itoa(int(p.MaxPods))))
	labels := nodeLabels(bp, p, labelSet{noAgentPool: true, noGPUProduct: m.Substituted})
	flags = append(flags, many("--labels", labelPairs(labels)...))
	if len(taints) > 0 {
		flags = append(flags, one("--node-taints", strings.Join(taints, ",")))
	}
	if p.Machine.GPU != nil {
		comments = append(comments, fmt.Sprintf("AKS installs the NVIDIA driver on GPU nodes; deploy the NVIDIA device plugin (or GPU Operator) so that they advertise %s.", p.GPUResource()))
	}
	return comments, flags
}

// aksPoolName is the pool's AKS name: its blueprint name without '-',
// which must then be 1-12 lower-case letters and digits starting with a
// letter (1-6 for Windows) and unique.
func aksPoolName(i int, p *v1alpha1.Pool, owners map[string]string, ps *problems) (string, []string) {
	limit := aksNameMax
	if p.OS == v1alpha1.Windows {
		limit = aksWindowsNameMax
	}
	name := strings.ReplaceAll(p.Name, "-", "")
	field := poolPath(i) + ".name"
	kind := "node pool"
	if p.OS == v1alpha1.Windows {
		kind = "Windows node pool"
	}
	if !aksNameRE.MatchString(name) || len(name) > limit {
		ps.add(p.Name, field,
			fmt.Sprintf("AKS names a %s with 1 to %d lower-case letters and digits, starting with a letter; without its '-' this name is %q (%d characters)", kind, limit, name, len(name)),
			fmt.Sprintf("rename the pool, e.g. to %q", suggestAKSName(name, limit)))
		return name, nil
	}
	if other, taken := owners[name]; taken {
		ps.add(p.Name, field, fmt.Sprintf("its AKS name %q is also pool %s's", name, other), "rename one of the two pools")
	}
	owners[name] = p.Name
	if name == p.Name {
		return name, nil
	}
	return name, []string{fmt.Sprintf("AKS pool names cannot contain '-', so pool %s is AKS pool %s: its nodes carry agentpool=%s and berth.io/pool=%s.", p.Name, name, name, p.Name)}
}

func suggestAKSName(name string, limit int) string {
	s := strings.TrimLeft(name, "0123456789")
	if len(s) > limit {
		s = s[:limit]
	}
	if s == "" {
		return "pool1"
	}
	return s
}

// aksTaints are the pool's taints as --node-taints takes them; the Azure
// CLI refuses a taint without a value.
func aksTaints(i int, p *v1alpha1.Pool, ps *problems) []string {
	var out []string
	for j, t := range p.NodeTaints() {
		s := v1alpha1.TaintString(t)
		if !aksTaintRE.MatchString(s) {
			fix := "write it as KEY=VALUE:EFFECT"
			if t.Value == "" {
				fix = fmt.Sprintf("give it a value, e.g. %q", v1alpha1.TaintString(corev1.Taint{Key: t.Key, Value: "true", Effect: t.Effect}))
			}
			ps.add(p.Name, fmt.Sprintf("%s.taints[%d]", poolPath(i), j), fmt.Sprintf("AKS takes taints as KEY=VALUE:EFFECT with a value that starts with a letter or digit; %q is not one", s), fix)
			continue
		}
		out = append(out, s)
	}
	return out
}

func hasTaint(taints []string, t string) bool {
	for _, s := range taints {
		if s == t {
			return true
		}
	}
	return false
}

// aksZones maps each of spec.zones to an AKS zone number: a name ending
// in 1, 2 or 3 keeps that number, any other name takes its position in
// spec.zones plus one. It returns the mapping and a sentence for the
// script's header.
func aksZones(bp *v1alpha1.Blueprint, ps *problems) (map[string]int, string) {
	if defaultZones(bp) {
		return nil, "The blueprint names no zones of its own (only berth's default zone-1), so the pools are not pinned to availability zones."
	}
	nums := map[string]int{}
	byNum := map[int]string{}
	var pairs []string
	for j, z := range bp.Spec.Zones {
		n := j + 1
		if last := z[len(z)-1]; last >= '1' && last <= '3' {
			n = int(last - '0')
		}
		if n > 3 {
			ps.add("", fmt.Sprintf("spec.zones[%d]", j), fmt.Sprintf("AKS has availability zones 1, 2 and 3 only; zone %q would be zone %d", z, n), "list at most three zones, or name them so that they end in 1, 2 or 3")
			continue
		}
		if other, taken := byNum[n]; taken {
			ps.add("", fmt.Sprintf("spec.zones[%d]", j), fmt.Sprintf("zone %q and zone %q would both be AKS zone %d", other, z, n), "name the zones so that they end in different digits 1, 2 or 3")
			continue
		}
		nums[z], byNum[n] = n, z
		pairs = append(pairs, fmt.Sprintf("%s=%d", z, n))
	}
	return nums, "Zones: AKS numbers availability zones 1 to 3. A blueprint zone whose name ends in 1, 2 or 3 is that zone; any other is its position in spec.zones. Here " + strings.Join(pairs, ", ") + "."
}

func poolZoneNumbers(p *v1alpha1.Pool, zones map[string]int) []string {
	var out []string
	for _, z := range p.Zones {
		if n, ok := zones[z]; ok {
			out = append(out, strconv.Itoa(n))
		}
	}
	return out
}

// poolSummary is the first comment line above a pool's command.
func poolSummary(p *v1alpha1.Pool, sz size) string {
	nodes := fmt.Sprintf("%d nodes", sz.Initial)
	if sz.Initial == 1 {
		nodes = "1 node"
	}
	if sz.Autoscaled {
		nodes = fmt.Sprintf("autoscaled from %d to %d nodes", sz.Min, sz.Max)
	}
	s := fmt.Sprintf("Pool %s: %s, %s, %s, %s", p.Name, p.Mode, p.OS, p.Capacity, nodes)
	return s + "; each " + shape(p) + "."
}
