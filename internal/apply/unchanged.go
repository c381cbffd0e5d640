package apply

import (
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	admissionac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	coreac "k8s.io/client-go/applyconfigurations/core/v1"
	policyac "k8s.io/client-go/applyconfigurations/policy/v1"
	schedulingac "k8s.io/client-go/applyconfigurations/scheduling/v1"
	admissiondefaults "k8s.io/kubernetes/pkg/apis/admissionregistration/v1"
	coredefaults "k8s.io/kubernetes/pkg/apis/core/v1"
	policydefaults "k8s.io/kubernetes/pkg/apis/policy/v1"
	schedulingdefaults "k8s.io/kubernetes/pkg/apis/scheduling/v1"

	"berth.io/berth/api/v1alpha1"
)

// unchanged reports whether applying desired to live would change
// nothing, read from live alone: the fields berth's field manager owns in
// live, with their values (client-go's Extract functions, which read the
// managed fields as the API server keeps them), are exactly desired with
// the API server's defaults (a server-side apply defaults the applied
// object before it records whose fields are whose). A field someone else
// changed since is no longer berth's, so it shows as a difference. Either
// way the answer errs towards false: then the plan asks the API server
// with a server-side dry run, which for an admission policy means
// compiling all its CEL (most of a no-op plan's time).
func unchanged(live, desired *unstructured.Unstructured) bool {
	k, ok := extractable[live.GetKind()]
	if !ok || live.GetAPIVersion() != desired.GetAPIVersion() || desired.GetKind() != live.GetKind() {
		return false
	}
	liveObj, want := k.new(), k.new()
	if runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, liveObj) != nil ||
		runtime.DefaultUnstructuredConverter.FromUnstructured(desired.Object, want) != nil {
		return false
	}
	owned, err := k.extract(liveObj)
	if err != nil {
		return false
	}
	if k.defaulted {
		defaults.Default(want)
	}
	a, errA := plain(owned)
	b, errB := plain(want)
	if m, ok := b.(map[string]any); ok {
		delete(m, "status") // berth applies none; a default may add one
	}
	return errA == nil && errB == nil && reflect.DeepEqual(a, b)
}

// extractable are the kinds berth applies, each with the Extract function
// that reads the fields a field manager owns in an object of that kind.
var extractable = map[string]kindOps{
	// The Namespace defaulter adds the kubernetes.io/metadata.name label,
	// which the API server then keeps as its own, not the applier's.
	"Namespace":                        opsOf(coreac.ExtractNamespace).withoutDefaults(),
	"PriorityClass":                    opsOf(schedulingac.ExtractPriorityClass),
	"ResourceQuota":                    opsOf(coreac.ExtractResourceQuota),
	"LimitRange":                       opsOf(coreac.ExtractLimitRange),
	"PodDisruptionBudget":              opsOf(policyac.ExtractPodDisruptionBudget),
	"ValidatingAdmissionPolicy":        opsOf(admissionac.ExtractValidatingAdmissionPolicy),
	"ValidatingAdmissionPolicyBinding": opsOf(admissionac.ExtractValidatingAdmissionPolicyBinding),
	"MutatingAdmissionPolicy":          opsOf(admissionac.ExtractMutatingAdmissionPolicy),
	"MutatingAdmissionPolicyBinding":   opsOf(admissionac.ExtractMutatingAdmissionPolicyBinding),
}

type kindOps struct {
	new       func() runtime.Object
	extract   func(runtime.Object) (any, error)
	defaulted bool // whether the applied object's defaults are the applier's
}

func (k kindOps) withoutDefaults() kindOps { k.defaulted = false; return k }

func opsOf[T any, PT interface {
	*T
	runtime.Object
}, AC any](extract func(PT, string) (AC, error)) kindOps {
	return kindOps{
		new:       func() runtime.Object { return PT(new(T)) },
		extract:   func(o runtime.Object) (any, error) { return extract(o.(PT), v1alpha1.FieldManager) },
		defaulted: true,
	}
}

// defaults holds the API server's defaulting functions for those kinds.
var defaults = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, register := range []func(*runtime.Scheme) error{
		coredefaults.RegisterDefaults, schedulingdefaults.RegisterDefaults,
		policydefaults.RegisterDefaults, admissiondefaults.RegisterDefaults,
	} {
		if err := register(s); err != nil {
			panic(err) // generated code registering functions; cannot fail
		}
	}
	return s
}()

// plain is v as JSON would decode it, without empty values: the form in
// which an apply configuration and a desired object compare.
func plain(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return dropEmpty(out), nil
}

// dropEmpty removes nulls and empty maps and lists, at any depth.
func dropEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			e = dropEmpty(e)
			if empty(e) {
				delete(v, k)
			} else {
				v[k] = e
			}
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = dropEmpty(e)
		}
		return v
	}
	return v
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
