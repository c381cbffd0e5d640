package v1alpha1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
)

// SpotSettings rehearse a Spot pool's interruptions on the local cluster.
// Clouds ignore them: they take spot capacity away when they need it.
type SpotSettings struct {
	// Notice is how long an interruption notice lasts: the node's pods
	// get at most this long to stop, then the node goes. Nil means 30s,
	// as on Azure and Google Cloud; AWS gives 2m.
	Notice *metav1.Duration `json:"notice,omitempty"`
	// MeanTimeBetweenInterruptions, when set, interrupts one of the
	// pool's nodes, picked at random, at random times this far apart on
	// average (a Poisson process), for a rehearsal. Nil means never
	// unless asked.
	MeanTimeBetweenInterruptions *metav1.Duration `json:"meanTimeBetweenInterruptions,omitempty"`
	// Seed seeds the random times and picks, so that a rehearsal can be
	// repeated. Zero means from the clock.
	Seed int64 `json:"seed,omitempty"`
}

// DefaultSpotNotice is Azure's and Google Cloud's interruption notice.
const DefaultSpotNotice = 30 * time.Second

// SpotNotice is the pool's interruption notice.
func (p *Pool) SpotNotice() time.Duration {
	if p.Spot != nil && p.Spot.Notice != nil {
		return p.Spot.Notice.Duration
	}
	return DefaultSpotNotice
}

func validateSpot(pp *field.Path, p *Pool) problem.List {
	s := p.Spot
	if s == nil {
		return nil
	}
	var errs problem.List
	sp := pp.Child("spot")
	if p.Capacity != Spot {
		errs = append(errs, invalid(sp, fmt.Sprintf("pool %s is %s capacity: only Spot capacity is interrupted", p.Name, p.Capacity), "remove spot, or set capacity: Spot"))
	}
	if s.Notice != nil && s.Notice.Duration <= 0 {
		errs = append(errs, invalid(sp.Child("notice"), "must be positive", "e.g. 30s (Azure, Google Cloud) or 2m (AWS)"))
	}
	if m := s.MeanTimeBetweenInterruptions; m != nil && m.Duration < time.Second {
		errs = append(errs, invalid(sp.Child("meanTimeBetweenInterruptions"), "must be at least 1s", "e.g. 30m, or remove it to interrupt only when asked"))
	}
	return errs
}
