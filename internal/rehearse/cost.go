package rehearse

import (
	"berth.io/berth/internal/prices"
	"berth.io/berth/internal/rehearse/cost"
	"berth.io/berth/internal/rehearse/report"
)

// costOf prices the pools' measured node-hours: a Spot pool's hours are
// spot hours, any other's on demand; each team's share is what its pods
// requested on the pool.
func costOf(prices []prices.PoolPrice, pools []report.PoolResult) (*cost.Report, error) {
	var usage []cost.Usage
	for _, p := range pools {
		u := cost.Usage{Pool: p.Name, Teams: map[string]cost.Resources{}}
		if p.Capacity == "Spot" {
			u.SpotHours = p.NodeHours
		} else {
			u.OnDemandHours = p.NodeHours
		}
		for _, t := range p.Teams {
			u.Teams[t.Team] = cost.Resources{GPUHours: t.GPUHours, CPUHours: t.CPUHours}
		}
		usage = append(usage, u)
	}
	rep, err := cost.Compute(prices, usage)
	if err != nil {
		return nil, err
	}
	return &rep, nil
}
