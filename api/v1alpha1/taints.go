package v1alpha1

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// Taint is a pool's taint. A blueprint writes it as kubectl writes one,
// KEY[=VALUE]:EFFECT, and it is parsed once, as the blueprint is read
// (UnmarshalJSON); it is written back the same way (MarshalJSON), so a
// recorded blueprint reads as the file did.
type Taint corev1.Taint

// ParseTaint reads a taint written as kubectl writes it: KEY[=VALUE]:EFFECT.
// Its error is a *problem.Problem that says which part is wrong and how
// to write it.
func ParseTaint(s string) (Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok || strings.Contains(effect, ":") {
		return Taint{}, problem.New(`write it like "gpu=true:NoSchedule"`, fmt.Sprintf("taint %q is not KEY[=VALUE]:EFFECT", s))
	}
	key, value, _ := strings.Cut(kv, "=")
	t := Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	if p := t.check(); p != nil {
		return t, p
	}
	return t, nil
}

// MustParseTaint is ParseTaint for taints written in code, which are
// known to be good: it panics on a bad one.
func MustParseTaint(s string) Taint {
	t, err := ParseTaint(s)
	if err != nil {
		panic(err)
	}
	return t
}

// check says what is wrong with the taint's key, value or effect, or nil.
func (t Taint) check() *problem.Problem {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return problem.New(`use a key like "gpu" or "example.com/gpu"`, fmt.Sprintf("taint key %q is invalid: %s", t.Key, strings.Join(errs, "; ")))
	}
	if t.Value != "" {
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return problem.New(`use a label-like value such as "true"`, fmt.Sprintf("taint value %q is invalid: %s", t.Value, strings.Join(errs, "; ")))
		}
	}
	if slices.Contains(taintEffects, t.Effect) {
		return nil
	}
	fix := "use one of them"
	if e, ok := suggest(string(t.Effect), taintEffects...); ok {
		fix = fmt.Sprintf("did you mean %q?", e)
	}
	return problem.New(fix, fmt.Sprintf("effect %q is not one of NoSchedule, PreferNoSchedule, NoExecute", t.Effect))
}

// String writes the taint as KEY[=VALUE]:EFFECT.
func (t Taint) String() string { return TaintString(corev1.Taint(t)) }

// MarshalJSON writes the taint as a string, KEY[=VALUE]:EFFECT.
func (t Taint) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON reads a taint written as KEY[=VALUE]:EFFECT; its error
// is ParseTaint's.
func (t *Taint) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return problem.New(`write it like "gpu=true:NoSchedule"`, "a taint is written as one string")
	}
	parsed, err := ParseTaint(s)
	if err != nil {
		return err
	}
	*t = parsed
	return nil
}

// NodeTaints are the taints the pool's nodes carry.
func (p *Pool) NodeTaints() []corev1.Taint {
	out := make([]corev1.Taint, len(p.Taints))
	for i, t := range p.Taints {
		out[i] = corev1.Taint(t)
	}
	return out
}

// TaintString writes a taint back as KEY[=VALUE]:EFFECT.
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// suggest picks the allowed value v was probably meant to be: one that
// differs only in case, else one within an edit distance of two, case
// aside (enough to catch "NoSchedual" for "NoSchedule").
func suggest[T ~string](v string, allowed ...T) (T, bool) {
	for _, a := range allowed {
		if strings.EqualFold(string(a), v) {
			return a, true
		}
	}
	for _, a := range allowed {
		if words.EditDistance(strings.ToLower(string(a)), strings.ToLower(v)) <= 2 {
			return a, true
		}
	}
	var zero T
	return zero, false
}
