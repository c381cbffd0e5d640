package v1alpha1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// ParseTaint reads a taint written as kubectl writes it: KEY[=VALUE]:EFFECT.
// Its error says which part is wrong and how to write it.
func ParseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok || strings.Contains(effect, ":") {
		return corev1.Taint{}, fmt.Errorf("taint %q is not KEY[=VALUE]:EFFECT\nfix: write it like \"gpu=true:NoSchedule\"", s)
	}
	key, value, _ := strings.Cut(kv, "=")
	t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return t, fmt.Errorf("taint key %q is invalid: %s\nfix: use a key like \"gpu\" or \"example.com/gpu\"", key, strings.Join(errs, "; "))
	}
	if value != "" {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return t, fmt.Errorf("taint value %q is invalid: %s\nfix: use a label-like value such as \"true\"", value, strings.Join(errs, "; "))
		}
	}
	for _, e := range taintEffects {
		if t.Effect == e {
			return t, nil
		}
	}
	fix := "use one of them"
	if e, ok := suggest(effect, taintEffects...); ok {
		fix = fmt.Sprintf("did you mean %q?", e)
	}
	return t, fmt.Errorf("effect %q is not one of NoSchedule, PreferNoSchedule, NoExecute\nfix: %s", effect, fix)
}

// TaintString writes a taint back as KEY[=VALUE]:EFFECT.
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// closeTo reports whether a and b are within an edit distance of two,
// enough to catch "NoSchedual" for "NoSchedule".
func closeTo(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)] <= 2
}

// suggest picks the allowed value v was probably meant to be: one that
// differs only in case, else one within closeTo.
func suggest[T ~string](v string, allowed ...T) (T, bool) {
	for _, a := range allowed {
		if strings.EqualFold(string(a), v) {
			return a, true
		}
	}
	for _, a := range allowed {
		if closeTo(string(a), v) {
			return a, true
		}
	}
	var zero T
	return zero, false
}
