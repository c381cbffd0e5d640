package blueprint

import (
	"errors"
	"os"
	"testing"

	"berth.io/berth/api/v1alpha1"
)

// FuzzParse: no input may panic the loader, and every input either loads
// into a blueprint that validates or is refused with located problems.
func FuzzParse(f *testing.F) {
	for _, name := range TemplateNames() {
		data, _ := Template(name)
		f.Add(data)
	}
	if data, err := os.ReadFile("testdata/broken.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(valid))
	f.Add([]byte("spec: {pools: [{name: a, count: 99999999999}]}"))
	f.Add([]byte("a: &x [*x]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		bp, _, err := Parse("fuzz.yaml", data)
		if err == nil {
			if errs, _ := v1alpha1.Validate(bp); len(errs) > 0 {
				t.Fatalf("Parse accepted a blueprint that does not validate: %v", errs)
			}
			return
		}
		var bad *Error
		if !errors.As(err, &bad) {
			t.Fatalf("Parse returned %T %v, want *Error", err, err)
		}
		found := false
		for _, p := range bad.Problems {
			if p.File != "fuzz.yaml" {
				t.Fatalf("problem without its file: %v", p)
			}
			found = found || !p.Warning
		}
		if !found {
			t.Fatalf("refused with warnings only: %v", err)
		}
	})
}
