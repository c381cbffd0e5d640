package export

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

// The exports put the labels berth's local cluster puts on a pool's
// nodes (internal/pools) on cloud nodes too, so that selectors rehearsed
// locally keep working.

// labelSet says which of berth's labels a target sets itself rather than
// take from the export.
type labelSet struct {
	// noAgentPool: AKS sets agentpool to its own pool name.
	noAgentPool bool
	// noCapacityType: Karpenter sets karpenter.sh/capacity-type from the
	// NodePool's requirements and refuses it as a template label.
	noCapacityType bool
	// noGPUProduct: the machine's GPU is not the blueprint's product.
	noGPUProduct bool
}

// nodeLabels are the labels a pool's nodes carry: berth's own and the
// pool's.
func nodeLabels(bp *v1alpha1.Blueprint, p *v1alpha1.Pool, s labelSet) map[string]string {
	l := map[string]string{}
	for k, v := range p.Labels {
		l[k] = v
	}
	l[v1alpha1.LabelPool] = p.Name
	l[v1alpha1.LabelBlueprint] = bp.Metadata.Name
	l[v1alpha1.LabelMode] = strings.ToLower(string(p.Mode))
	l[v1alpha1.LabelCapacity] = capacityType(p)
	if !s.noAgentPool {
		l[v1alpha1.LabelAgentPool] = p.Name
	}
	if !s.noCapacityType {
		l[v1alpha1.LabelCapacityType] = capacityType(p)
	}
	if g := p.Machine.GPU; g != nil {
		l[v1alpha1.LabelGPUCount] = strconv.Itoa(int(g.Count))
		if !s.noGPUProduct {
			l[v1alpha1.LabelGPUProduct] = g.Product
		}
	}
	return l
}

// capacityType is spot or on-demand, as Karpenter and berth's local nodes
// spell it.
func capacityType(p *v1alpha1.Pool) string {
	if p.Capacity == v1alpha1.Spot {
		return "spot"
	}
	return "on-demand"
}

func hasTaintKey(p *v1alpha1.Pool, key string) bool {
	for _, t := range p.NodeTaints() {
		if t.Key == key {
			return true
		}
	}
	return false
}

// labelPairs writes labels as KEY=VALUE, sorted by key.
func labelPairs(m map[string]string) []string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return parts
}

// size is a pool's node count bounds.
type size struct {
	Min, Max, Initial int32
	Autoscaled        bool
}

func poolSize(p *v1alpha1.Pool) size {
	return size{Min: p.MinSize(), Max: p.MaxSize(), Initial: p.InitialSize(), Autoscaled: p.Autoscale != nil}
}

// Zone names that look like a cloud's own. Anything else (berth's
// zone-1, zone-2 ...) is a placeholder the exports cannot pass on.
var (
	// us-east-1a, ap-southeast-2b, us-gov-west-1a, and local zones
	// such as us-west-2-lax-1a; the group is the region.
	awsZoneRE = regexp.MustCompile(`^([a-z]{2}(?:-[a-z]+)+-[0-9]+)(?:-[a-z]+-[0-9]+)?[a-z]$`)
	// us-central1-a, europe-west4-b; the group is the region.
	gcpZoneRE = regexp.MustCompile(`^([a-z]+-[a-z]+[0-9]+)-[a-z]$`)
)

// defaultZones reports whether the blueprint names no zones of its own:
// spec.zones is only berth's default zone.
func defaultZones(bp *v1alpha1.Blueprint) bool {
	return len(bp.Spec.Zones) == 1 && bp.Spec.Zones[0] == v1alpha1.DefaultZone
}

// zoneRegion is the one region all zones belong to by re, or false when
// some zone does not match re or they span regions.
func zoneRegion(re *regexp.Regexp, zones []string) (string, bool) {
	region := ""
	for _, z := range zones {
		m := re.FindStringSubmatch(z)
		if m == nil || (region != "" && m[1] != region) {
			return "", false
		}
		region = m[1]
	}
	return region, region != ""
}

func poolPath(i int) string {
	return "spec.pools[" + strconv.Itoa(i) + "]"
}
