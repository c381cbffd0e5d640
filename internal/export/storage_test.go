package export

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"berth.io/berth/internal/blueprint"
)

// Each cloud gets its block-disk driver for a ReadWriteOnce class and its
// file-share driver for a ReadWriteMany one, and is told what a
// StorageClass cannot carry.
func TestStorageClasses(t *testing.T) {
	bp, _, err := blueprint.Parse("b.yaml", []byte(`apiVersion: berth.io/v1alpha1
kind: Blueprint
metadata: {name: shop}
spec:
  pools:
  - {name: system, mode: System, machine: {cpu: 4, memory: 16Gi}, count: 1, taints: ["CriticalAddonsOnly=true:NoSchedule"]}
  storage:
    classes:
    - {name: fast, default: true, provisioningTime: 10s, maxVolumesPerNode: 25}
    - {name: files, accessModes: [ReadWriteMany]}
    - {name: anywhere, zonal: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[Target][]string{
		EKS: {"provisioner: ebs.csi.aws.com", "provisioner: efs.csi.aws.com", "set fileSystemId", "type: gp3"},
		AKS: {"provisioner: disk.csi.azure.com", "provisioner: file.csi.azure.com"},
		GKE: {"provisioner: pd.csi.storage.gke.io", "provisioner: filestore.csi.storage.gke.io", "at least 1 TiB"},
	} {
		manifests, notes, err := storageClasses(bp, target)
		if err != nil {
			t.Fatal(err)
		}
		all := manifests + strings.Join(notes, "\n")
		for _, w := range append(want,
			"is-default-class",
			"does not carry provisioningTime",
			"maxVolumesPerNode (each instance type's attach limit",
			"Class anywhere (spec.storage.classes[2]) is not zonal",
		) {
			if !strings.Contains(all, w) {
				t.Errorf("%s: the StorageClasses and notes do not say %q:\n%s", target, w, all)
			}
		}
		if strings.Count(manifests, "kind: StorageClass") != 3 {
			t.Errorf("%s: %d StorageClasses; want 3", target, strings.Count(manifests, "kind: StorageClass"))
		}
	}
	if m, _, _ := storageClasses(bp, Karpenter); m != "" {
		t.Errorf("Karpenter's NodePools got StorageClasses: %s", m)
	}
}

// What the output's `#| ` lines hold is one YAML stream kubectl can
// apply: on EKS with the priority expander, its ConfigMap and the
// StorageClasses.
func TestStorageClassesApplyFromTheOutput(t *testing.T) {
	bp := blueprint.MustLoadTemplate("retail")
	bp.Spec.Autoscaler.Expander = "priority"
	for _, target := range []Target{EKS, AKS, GKE} {
		var out strings.Builder
		if err := Export(&out, bp, target); err != nil {
			t.Fatal(err)
		}
		var stream []string
		for _, l := range strings.Split(out.String(), "\n") {
			if rest, ok := strings.CutPrefix(l, "#| "); ok {
				stream = append(stream, rest)
			}
		}
		var kinds []string
		for _, doc := range strings.Split(strings.Join(stream, "\n"), "---") {
			var obj struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: a document of the #| lines does not parse: %v\n%s", target, err, doc)
			}
			if obj.Kind != "" {
				kinds = append(kinds, obj.Kind)
			}
		}
		if !slices.Contains(kinds, "StorageClass") || (target == EKS && !slices.Contains(kinds, "ConfigMap")) {
			t.Errorf("%s: the #| lines hold %v", target, kinds)
		}
	}
}
