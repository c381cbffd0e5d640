package blueprint

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"berth.io/berth/api/v1alpha1"
)

// FuzzParse: no input may panic the loader, and every input either loads
// into a blueprint that validates or is refused with at least one located
// error. Parsing is deterministic, so the same input reads the same twice.
func FuzzParse(f *testing.F) {
	var seeds [][]byte
	for _, name := range TemplateNames() {
		data, err := Template(name)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	broken, err := os.ReadFile("testdata/broken.yaml")
	if err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, broken, []byte(valid))
	for _, s := range seeds {
		f.Add(s)
		// A few mutations of each seed, to start the fuzzer near the
		// interesting edges: cut short, cut in the middle of a line, a
		// second document, and tabs for indentation.
		f.Add(s[:len(s)/2])
		f.Add(s[:len(s)*2/3+1])
		f.Add(append(bytes.Clone(s), "---\nkind: Blueprint\n"...))
		f.Add(bytes.ReplaceAll(s, []byte("  "), []byte("\t")))
	}
	for _, s := range []string{
		"",
		"~",
		"hello",
		"- a\n- b\n",
		"{}",
		"spec: {pools: [{name: a, count: 99999999999}]}",
		"spec: {pools: [{name: a, mode: System, machine: {cpu: .inf, memory: -.nan}}]}",
		"spec: {pools: [{name: a, machine: {cpu: 1e400, memory: 0x10}, autoscale: {min: -1, max: 2147483647}}]}",
		"spec: {pools: [&p {name: a, mode: System, machine: {cpu: 1, memory: 1Gi}}, *p, {<<: *p, name: b}]}",
		"metadata: {labels: {&k a: b, *k : c, [x]: y, ? {z: 1} : w}}",
		"spec: {classes: [{name: c, pools: [a], disruption: {minAvailable: 50%, maxUnavailable: 1.5}}]}",
		"spec: {teams: [{name: t, quota: {gpu: 1e18, cpu: -1}, defaults: {cpuRequest: 2, cpuLimit: 1m}}]}",
		"a: &x [*x]",
		"a: *x",
		"a: [b\n",
		"\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bp, warnings, err := Parse("fuzz.yaml", data)
		if err == nil {
			if bp == nil {
				t.Fatal("Parse returned neither a blueprint nor an error")
			}
			if errs, _ := v1alpha1.Validate(bp); len(errs) > 0 {
				t.Fatalf("Parse accepted a blueprint that does not validate: %v", errs)
			}
			for _, w := range warnings {
				if !w.Warning || w.File != "fuzz.yaml" {
					t.Fatalf("Parse accepted a blueprint with problem %#v", w)
				}
			}
		} else {
			var bad *Error
			if !errors.As(err, &bad) {
				t.Fatalf("Parse returned %T %v, want *Error", err, err)
			}
			if bp != nil {
				t.Fatal("Parse returned a blueprint along with an error")
			}
			refused := false
			for _, p := range bad.Problems {
				if p.File != "fuzz.yaml" {
					t.Fatalf("problem without its file: %#v", p)
				}
				refused = refused || !p.Warning
			}
			if !refused {
				t.Fatalf("refused with warnings only: %v", err)
			}
		}
		_, _, again := Parse("fuzz.yaml", data)
		if (err == nil) != (again == nil) || (err != nil && err.Error() != again.Error()) {
			t.Fatalf("Parse is not deterministic:\n%v\nthen\n%v", err, again)
		}
	})
}
