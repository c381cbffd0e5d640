package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/autoscaler"
	"berth.io/berth/internal/problem"
)

// upAutoscalerFlags compress or change the node autoscaler's timings for
// one rehearsal without editing the blueprint: they apply on top of the
// profile the cluster's blueprint carries, at every scan, so an apply
// that changes the profile does not undo them.
type upAutoscalerFlags struct {
	profile          []string
	provisioningTime []string
	seed             uint64

	settings  map[string]json.RawMessage
	provision map[string]time.Duration // pool → time; "" for every pool
}

func (f *upAutoscalerFlags) add(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.profile, "autoscaler", nil, "override a field of the blueprint's spec.autoscaler for this run, as FIELD=VALUE (repeatable), e.g. scanInterval=1s,scaleDownUnneededTime=30s")
	fs.StringSliceVar(&f.provisioningTime, "provisioning-time", nil, "how long new nodes take to become Ready, as DURATION for every pool or POOL=DURATION (repeatable)")
	fs.Uint64Var(&f.seed, "autoscaler-seed", 0, "seed of the random expander, for repeatable rehearsals (default: from the clock)")
}

// complete checks the flags against the blueprint.
func (f *upAutoscalerFlags) complete(bp *v1alpha1.Blueprint) error {
	f.settings = map[string]json.RawMessage{}
	known := jsonFieldNames(v1alpha1.AutoscalerProfile{})
	for _, s := range f.profile {
		k, val, ok := strings.Cut(s, "=")
		if !ok || !known[k] {
			return problem.Errorf(fmt.Sprintf("e.g. --autoscaler scanInterval=1s (fields: %s)", strings.Join(slices.Sorted(maps.Keys(known)), ", ")), "--autoscaler %q is not FIELD=VALUE with FIELD one of spec.autoscaler's fields", s)
		}
		f.settings[k] = rawValue(val)
	}
	if len(f.settings) > 0 {
		// Prove the overrides decode and validate before the cluster starts.
		test := &v1alpha1.AutoscalerProfile{}
		if raw, err := json.Marshal(bp.Spec.Autoscaler); err == nil {
			_ = json.Unmarshal(raw, test)
		}
		if err := f.tuneProfile(test); err != nil {
			return err
		}
		probe := *bp
		probe.Spec.Autoscaler = test
		if errs, _ := v1alpha1.Validate(&probe); len(errs) > 0 {
			return fmt.Errorf("--autoscaler: %w", errs)
		}
	}
	f.provision = map[string]time.Duration{}
	for _, s := range f.provisioningTime {
		pool, val, ok := strings.Cut(s, "=")
		if !ok {
			pool, val = "", s
		}
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return problem.Errorf("e.g. --provisioning-time 5s or --provisioning-time gpu=90s", "--provisioning-time %q is not [POOL=]DURATION", s)
		}
		if pool != "" && findPool(bp.Spec.Pools, pool) == nil {
			return problem.Errorf(fmt.Sprintf("use one of %s", poolNames(bp.Spec.Pools)), "--provisioning-time %s: the blueprint has no pool %q", s, pool)
		}
		f.provision[pool] = d
	}
	return nil
}

// options are the autoscaler's options for cluster.Start.
func (f *upAutoscalerFlags) options() autoscaler.Options {
	o := autoscaler.Options{Seed: f.seed}
	if len(f.settings) == 0 && len(f.provision) == 0 {
		return o
	}
	o.Tune = func(bp *v1alpha1.Blueprint) {
		if err := f.tuneProfile(bp.Spec.Autoscaler); err != nil {
			return // complete proved they apply
		}
		for i := range bp.Spec.Pools {
			a := bp.Spec.Pools[i].Autoscale
			if a == nil {
				continue
			}
			d, ok := f.provision[bp.Spec.Pools[i].Name]
			if !ok {
				d, ok = f.provision[""]
			}
			if ok {
				a.ProvisioningTime = &metav1.Duration{Duration: d}
			}
		}
	}
	return o
}

// tuneProfile sets the overridden fields of p.
func (f *upAutoscalerFlags) tuneProfile(p *v1alpha1.AutoscalerProfile) error {
	for k, raw := range f.settings {
		doc, _ := json.Marshal(map[string]json.RawMessage{k: raw})
		if err := json.Unmarshal(doc, p); err != nil {
			return problem.Errorf("write durations like 10s, shares like 0.5, counts like 10, switches as true or false", "--autoscaler %s=%s: %w", k, raw, err)
		}
	}
	return nil
}

// rawValue is a flag's value as JSON: numbers and booleans as they are,
// anything else (durations, expander names) as a string.
func rawValue(s string) json.RawMessage {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return json.RawMessage(s)
	}
	if s == "true" || s == "false" {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func jsonFieldNames(v any) map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[name] = true
	}
	return out
}
