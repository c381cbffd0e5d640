package audit

import (
	"bytes"
	"strings"
	"testing"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/export"
)

// heldWaiting audits the retail template's exported manifests, edited by
// old, new pairs, beside the blueprint, and lists the teams and classes
// of its berth/quota-held-waiting findings.
func heldWaiting(t *testing.T, pairs ...string) []string {
	t.Helper()
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(doc, pairs[i]) {
			t.Fatalf("retail template lacks %q", pairs[i])
		}
		doc = strings.Replace(doc, pairs[i], pairs[i+1], 1)
	}
	bp, _, err := blueprint.Parse("retail.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var manifests bytes.Buffer
	if err := export.Export(&manifests, bp, export.Manifests); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir+"/manifests.yaml", manifests.Bytes())
	o := Options{}
	o.UseBlueprint(bp)
	var out []string
	for _, f := range loadAndCheck(t, o, dir).Findings {
		if f.Rule == v1alpha1.RuleQuotaHeldWaiting {
			out = append(out, f.Object.Namespace+" "+strings.Fields(strings.SplitAfter(f.Message, "of class ")[1])[0])
		}
	}
	return out
}

func TestQuotaHeldWaiting(t *testing.T) {
	// The fix the finding gives: a class that also reaches spot-gpu.
	if got := heldWaiting(t, "  - name: batch-inference\n    pools: [gpu]", "  - name: batch-inference\n    pools: [gpu, spot-gpu]"); len(got) != 2 || strings.Contains(strings.Join(got, ","), "batch-inference") {
		t.Errorf("with batch-inference on both GPU pools: %q; want inference's two findings alone", got)
	}
	// A team that may use only classes reaching every GPU pool it uses.
	if got := heldWaiting(t, "  - name: team-b\n    quota: {gpu: 2}", "  - name: team-b\n    classes: [training, batch]\n    quota: {gpu: 2}"); strings.Contains(strings.Join(got, ","), "team-b") {
		t.Errorf("team-b limited to training and batch: %q; want no finding on team-b", got)
	}
	// The other fix: Kueue, where work waits suspended.
	if got := heldWaiting(t, "  pools:\n", "  queueing: Kueue\n  pools:\n"); len(got) != 0 {
		t.Errorf("under queueing: Kueue: %q; want none", got)
	}
}
