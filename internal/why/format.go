package why

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// quantity writes a resource amount as people read it: CPUs in cores
// ("15.5"), memory in binary units ("62.5Gi"), anything else as counted.
func quantity(name corev1.ResourceName, q resource.Quantity) string {
	switch {
	case name == corev1.ResourceCPU:
		return trimFloat(float64(q.MilliValue())/1000, 3)
	case name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return byteSize(q.Value())
	default:
		return q.String()
	}
}

func byteSize(b int64) string {
	units := []struct {
		suffix string
		size   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}
	neg := ""
	if b < 0 {
		neg, b = "-", -b
	}
	for _, u := range units {
		if b >= u.size {
			return neg + trimFloat(float64(b)/float64(u.size), 1) + u.suffix
		}
	}
	return neg + strconv.FormatInt(b, 10)
}

func trimFloat(f float64, prec int) string {
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// age is a duration as kubectl writes ages: 45s, 3m, 2h, 4d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func lowerKind(kind string) string { return strings.ToLower(kind) }

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// taintString is KEY[=VALUE]:EFFECT, as kubectl and the blueprint write it.
func taintString(t corev1.Taint) string { return t.ToString() }

// tolerationFor is the toleration that tolerates t, as YAML flow.
func tolerationFor(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("{key: %s, operator: Exists, effect: %s}", t.Key, t.Effect)
	}
	return fmt.Sprintf("{key: %s, operator: Equal, value: %q, effect: %s}", t.Key, t.Value, t.Effect)
}
