package blueprint

import (
	"fmt"
	"os"
	"testing"
)

func TestZZScratch(t *testing.T) {
	for _, s := range []string{
		"hello",
		"- a\n- b\n",
		"# only a comment\n",
		"---\n",
		"---\n---\n",
		"---\n---\nkind: x\n",
		"a: *x\n",
		"\x01",
		"apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: x}\nspec:\n  pools:\n  - &base {name: system, mode: System, machine: {cpu: 2, memory: 8Gi}, count: 1}\n  - <<: *base\n    name: other\n",
		"apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: x, labels: {&k foo: bar, *k : baz}}\nspec:\n  pools:\n  - {name: system, mode: System, machine: {cpu: .inf, memory: 8Gi}, count: 1}\n",
		"apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: x}\nspec:\n  pools:\n  - {name: system, mode: System, machine: {cpu: 2, memory: 8Gi}, count: 1}\n  classes:\n  - {name: c, pools: [system], disruption: {minAvailable: 1.5}}\n  - {name: d, pools: [system], disruption: {minAvailable: abc}}\n  - {name: e, pools: [system], disruption: {maxUnavailable: -3}}\n",
		"apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: x}\nspec:\n  pools:\n  - {name: system, mode: System, machine: {cpu: 2, memory: 8Gi}, count: 0x10}\n",
		"apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: x}\nspec:\n  pools:\n  - {name: system, mode: System, machine: {cpu: 2, memory: 8Gi}, count: 1}\n  - {name: g, machine: {cpu: 2, memory: 8Gi, gpu: {count: 1, product: x, resource: amd.com/gpu}}, count: 1}\n  teams:\n  - {name: t, quota: {gpu: 1}}\n",
		"apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: x}\nspec:\n  pools:\n  - {name: system, mode: System, machine: {cpu: 2, memory: 8Gi, gpu: {count: 1, product: x}}, count: 1}\n  teams:\n  - {name: t, quota: {gpu: 1e18}}\n",
		"apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: x}\nspec:\n  pools:\n  - {name: system, mode: System, machine: {cpu: 2, memory: 8Gi}, count: 1}\n  teams:\n  - {name: t, quota: {gpu: 1}}\n",
		"apiVersion: berth.io/v1alpha1\nkind: Blueprint\nmetadata: {name: x}\nspec:\n  pools:\n  - {name: system, mode: System, machine: {cpu: 2, memory: 8Gi}, count: 1}\n  - {name: system, mode: System, machine: {cpu: 2, memory: 8Gi}, cout: 1}\n",
	} {
		bp, w, err := Parse("f.yaml", []byte(s))
		fmt.Fprintf(os.Stdout, "=== %q\nbp=%v w=%v\nerr=%v\n", s, bp != nil, w, err)
		if e, ok := err.(*Error); ok {
			for _, p := range e.Problems {
				fmt.Printf("   %#v\n", p)
			}
		}
	}
}
