package blueprint

import (
	"path/filepath"
	"testing"
)

// TestDocsExamples loads every blueprint under docs/examples as `berth
// validate` does: each must be valid and draw no warning, since the README
// shows one whole and says it validates.
func TestDocsExamples(t *testing.T) {
	files, err := filepath.Glob("../../docs/examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no blueprints under docs/examples")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			bp, warnings, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Errorf("warnings: %v", warnings)
			}
			if bp.Metadata.Name == "" {
				t.Error("no metadata.name")
			}
		})
	}
}
