package prices

import (
	"fmt"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/export"
	"berth.io/berth/internal/problem"
)

// PoolPrice is what a node-hour of one pool costs and where the figure
// comes from; or, with Problem set, why the pool has no price and how to
// give it one (the prices are then zero, never a price of $0).
type PoolPrice struct {
	Pool     string                `json:"pool"`
	Capacity v1alpha1.CapacityType `json:"capacity"`
	// OnDemand is an on-demand node-hour.
	OnDemand v1alpha1.Dollars `json:"onDemand,omitempty"`
	// Spot is a spot node-hour; zero when unknown, which only an
	// OnDemand pool may be.
	Spot v1alpha1.Dollars `json:"spot,omitempty"`
	// From says where the price comes from: the blueprint's field
	// ("spec.pools[3].price") or the table's row (Row.String).
	From string `json:"from,omitempty"`
	// Row is the table's row the price comes from; nil for the
	// blueprint's own price.
	Row *Row `json:"row,omitempty"`
	// Problem says why the pool has no price, and how to give it one.
	Problem *problem.Problem `json:"problem,omitempty"`
	// GPUs and CPU are one node's (CPU in cores): a GPU pool's cost is
	// shared among teams by GPU-hours, any other pool's by CPU-hours.
	GPUs int32   `json:"gpus,omitempty"`
	CPU  float64 `json:"cpu"`
}

// exportTargets are the export targets whose instance types a cloud's
// rows price.
var exportTargets = map[Cloud]export.Target{AWS: export.EKS, Azure: export.AKS, GCP: export.GKE}

// Price finds each pool's price, in bp's pool order: the blueprint's
// pools[].price; else, when cloud is set, t's row for the instance type
// `berth export` gives the pool on that cloud (machine.instanceTypes,
// else the catalog's smallest fit) or, failing that, for machine.type if
// t lists it on that cloud; else, with no cloud, t's row for
// machine.type. A Spot pool also needs a spot price. A pool none of
// these prices gets a Problem that says so and how to give one.
// bp must be defaulted and valid, as blueprint.Load returns it.
func Price(bp *v1alpha1.Blueprint, t *Table, cloud Cloud) []PoolPrice {
	out := make([]PoolPrice, len(bp.Spec.Pools))
	for i := range bp.Spec.Pools {
		out[i] = price(bp, i, t, cloud)
	}
	return out
}

func price(bp *v1alpha1.Blueprint, i int, t *Table, cloud Cloud) PoolPrice {
	p := &bp.Spec.Pools[i]
	pp := PoolPrice{Pool: p.Name, Capacity: p.Capacity, CPU: float64(p.Machine.CPU.MilliValue()) / 1000}
	if g := p.Machine.GPU; g != nil {
		pp.GPUs = g.Count
	}
	field := fmt.Sprintf("spec.pools[%d].price", i)
	if p.Price != nil {
		pp.OnDemand, pp.Spot, pp.From = p.Price.OnDemand, p.Price.Spot, field
		return pp
	}

	// which instance type to look up, and what to say when it has no row
	var (
		row      Row
		found    bool
		why, fix string
	)
	example := `{onDemand: "2.01"}`
	if p.Capacity == v1alpha1.Spot {
		example = `{onDemand: "2.01", spot: "0.81"}`
	}
	fix = fmt.Sprintf("set %s: %s, in US dollars per node-hour", field, example)
	typ := p.Machine.Type
	switch {
	case cloud != "":
		picked, err := export.InstanceType(bp, i, exportTargets[cloud])
		switch {
		case err == nil:
			row, found = t.Find(picked)
			why = fmt.Sprintf("the price table has no row for %s, the %s instance type berth export gives it", picked, cloud)
			fix += fmt.Sprintf(", or give a row for %s with --prices FILE", picked)
		default:
			why = fmt.Sprintf("berth export gives it no %s instance type (%s)", cloud, problemMessage(err))
			fix += fmt.Sprintf(", or name its %s instance type in machine.instanceTypes", cloud)
		}
		if !found && typ != "" {
			if r, ok := t.Find(typ); ok && r.Cloud == cloud {
				row, found = r, true
			}
		}
	case typ != "":
		row, found = t.Find(typ)
		why = fmt.Sprintf("the price table has no row for its machine.type %s", typ)
		fix += fmt.Sprintf(", give a row for %s with --prices FILE, or rehearse with --cloud aws|azure|gcp to price the instance type berth export gives it", typ)
	default:
		why = "it names no machine.type, and the rehearsal no cloud to price the instance type berth export would give it"
		fix += ", or rehearse with --cloud aws|azure|gcp"
	}
	if !found {
		pp.Problem = poolProblem(p.Name, field, "the pool has no price: "+why, fix)
		return pp
	}
	spot, hasSpot := row.Spot()
	if p.Capacity == v1alpha1.Spot && !hasSpot {
		pp.Problem = poolProblem(p.Name, field,
			fmt.Sprintf("the pool is Spot capacity and has no spot price: the price table's row for %s gives none", row.Type),
			fmt.Sprintf("set %s: %s, in US dollars per node-hour, or give %s a spot price or discount with --prices FILE", field, example, row.Type))
		return pp
	}
	pp.OnDemand, pp.Spot, pp.From, pp.Row = row.OnDemand, spot, row.String(), &row
	return pp
}

func poolProblem(pool, field, message, fix string) *problem.Problem {
	return &problem.Problem{Object: problem.Object{Kind: "Pool", Name: pool}, Field: field, Message: message, Fix: fix}
}

// problemMessage is an error's message without its fix.
func problemMessage(err error) string {
	if p, ok := problem.As(err); ok {
		return p.Message
	}
	return err.Error()
}
