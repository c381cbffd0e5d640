package blueprint

import (
	"maps"
	"testing"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Files that are not YAML, not one document, or not shaped like a
// blueprint are refused before validation, with the line at fault.
func TestParseReportsDecodingProblems(t *testing.T) {
	testProblems(t, []problemCase{
		// YAML that does not parse, or is not one document.
		{
			name:  "invalid YAML",
			edits: []string{"  name: t\n", "  name: t: u\n"},
			want:  []want{{Line: 4, Message: "invalid YAML: mapping values are not allowed in this context", Fix: "indentation"}},
		},
		{
			// yaml.v3 numbers the lines of parser errors from 0.
			name:  "unclosed flow list",
			edits: []string{"  name: t\n", "  name: [t\n"},
			want:  []want{{Line: 4, Message: "invalid YAML: did not find expected ',' or ']'"}},
		},
		{
			name:  "second document",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n---\nkind: Other\n"},
			want:  []want{{Line: 23, Message: "a blueprint file holds one document, found a second", Fix: `remove the "---"`}},
		},
		{
			name:  "empty file",
			edits: []string{valid, ""},
			want:  []want{{Message: "the file is empty", Fix: "berth init"}},
		},
		{
			name:  "unknown anchor",
			edits: []string{"pools: [gpu]", "pools: [*gpu]"},
			want:  []want{{Message: "invalid YAML: unknown anchor 'gpu' referenced"}},
		},
		{
			name:  "not a map",
			edits: []string{valid, "- apiVersion: berth.io/v1alpha1\n"},
			want:  []want{{Line: 1, Message: "expected a map of fields, found a list"}},
		},
		{
			name:  "only a comment",
			edits: []string{valid, "# nothing yet\n"},
			want:  []want{{Message: "the file is empty", Fix: "berth init"}},
		},

		{
			name:  "unknown field",
			edits: []string{"    count: 2\n", "    cuont: 2\n"},
			want:  []want{{Line: 11, Field: "spec.pools[0].cuont", Message: `unknown field "cuont"`, Fix: `did you mean "count"?`}},
		},
		{
			name:  "unknown field far from any other",
			edits: []string{"  name: t\n", "  name: t\n  owner: me\n"},
			want:  []want{{Line: 5, Field: "metadata.owner", Message: `unknown field "owner"`, Fix: "the fields here are annotations, labels, name"}},
		},
		{
			name:  "duplicate field",
			edits: []string{"    count: 2\n", "    count: 2\n    count: 3\n"},
			want:  []want{{Line: 12, Field: "spec.pools[0].count", Message: `field "count" appears twice`, Fix: "keep one"}},
		},
		{
			name:  "duplicate map key",
			edits: []string{"    count: 2\n", "    count: 2\n    labels: {tier: a, tier: b}\n"},
			want:  []want{{Line: 12, Field: "spec.pools[0].labels[tier]", Message: `key "tier" appears twice`, Fix: "keep one"}},
		},
		{
			name:  "string for a count",
			edits: []string{"    count: 2\n", "    count: two\n"},
			want:  []want{{Line: 11, Field: "spec.pools[0].count", Message: `expected a whole number, found "two"`, Fix: "without quotes"}},
		},
		{
			name:  "quoted count",
			edits: []string{"    count: 2\n", "    count: \"2\"\n"},
			want:  []want{{Line: 11, Field: "spec.pools[0].count", Message: `expected a whole number, found "2"`, Fix: "without quotes"}},
		},
		{
			name:  "count too large",
			edits: []string{"    count: 2\n", "    count: 99999999999\n"},
			want:  []want{{Line: 11, Field: "spec.pools[0].count", Message: "expected a whole number"}},
		},
		{
			name:  "list where a map is expected",
			edits: []string{"machine: {cpu: 4, memory: 16Gi}", "machine: [4, 16Gi]"},
			want:  []want{{Line: 10, Field: "spec.pools[0].machine", Message: "expected a map of fields, found a list"}},
		},
		{
			name:  "map where a list is expected",
			edits: []string{"  zones: [zone-1, zone-2]\n", "  zones: {a: zone-1}\n"},
			want:  []want{{Line: 6, Field: "spec.zones", Message: "expected a list, found a map", Fix: `"- item"`}},
		},
		{
			name:  "list for a string",
			edits: []string{"  name: t\n", "  name: [t]\n"},
			want:  []want{{Line: 4, Field: "metadata.name", Message: "expected a single value, found a list"}},
		},
		{
			name:  "scalar for labels",
			edits: []string{"    count: 2\n", "    count: 2\n    labels: tier\n"},
			want:  []want{{Line: 12, Field: "spec.pools[0].labels", Message: `expected a map of key: value, found "tier"`}},
		},
		{
			name:  "unparsable quantity",
			edits: []string{"cpu: 24,", `cpu: "16 cores",`},
			want:  []want{{Line: 14, Field: "spec.pools[1].machine.cpu", Message: `"16 cores" is not a quantity`, Fix: "16, 500m or 64Gi"}},
		},
		{
			name:  "infinite quantity",
			edits: []string{"cpu: 24,", "cpu: .inf,"},
			want:  []want{{Line: 14, Field: "spec.pools[1].machine.cpu", Message: `".inf" is not a quantity`, Fix: "16, 500m or 64Gi"}},
		},
		{
			name:  "fractional disruption budget",
			edits: []string{"    pools: [gpu]\n", "    pools: [gpu]\n    disruption: {minAvailable: 1.5}\n"},
			want:  []want{{Line: 23, Field: "spec.classes[0].disruption.minAvailable", Message: `"1.5"`, Fix: `"50%"`}},
		},
		{
			name:  "map key repeated through an alias",
			edits: []string{"    count: 2\n", "    count: 2\n    labels: {&k tier: a, *k : b}\n"},
			want:  []want{{Line: 12, Field: "spec.pools[0].labels[tier]", Message: `key "tier" appears twice`}},
		},
		{
			name:  "several decoding problems at once",
			edits: []string{"    count: 2\n", "    cuont: 2\n", "cpu: 24,", "cpu: lots,", "quota: {gpu: 2}", "quota: [2]"},
			want: []want{
				{Line: 11, Field: "spec.pools[0].cuont", Message: "unknown field"},
				{Line: 14, Field: "spec.pools[1].machine.cpu", Message: "is not a quantity"},
				{Line: 19, Field: "spec.teams[0].quota", Message: "expected a map of fields, found a list"},
			},
		},
	})
}

// DecodeNode reads another file kind as strictly as a blueprint: every
// problem in one pass, each with its field and line, and the lines of the
// fields for problems found later.
func TestDecodeNode(t *testing.T) {
	var doc yaml.Node
	src := "spec:\n  items:\n  - size: 4Gi\n    colour: red\n  - size: big\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Spec struct {
			Items []struct {
				Size resource.Quantity `json:"size"`
			} `json:"items"`
		} `json:"spec"`
	}
	lines, problems := DecodeNode(doc.Content[0], &v)
	got := map[string]int{}
	for _, p := range problems {
		got[p.Field] = p.Line
	}
	if want := map[string]int{"spec.items[0].colour": 4, "spec.items[1].size": 5}; !maps.Equal(got, want) {
		t.Errorf("problems at %v, want %v: %v", got, want, problems)
	}
	if len(v.Spec.Items) != 2 || v.Spec.Items[0].Size.String() != "4Gi" {
		t.Errorf("decoded %+v, want the first size 4Gi", v)
	}
	if l := lines.Of("spec.items[1].size.unit"); l != 5 {
		t.Errorf("Lines.Of a path below spec.items[1].size = %d, want its line 5", l)
	}
	if l := lines.Of("status"); l != 0 {
		t.Errorf("Lines.Of a path the document lacks = %d, want 0", l)
	}
}
