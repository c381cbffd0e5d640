package export

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

func pool(cpu, mem string, gpus int32, product string) *v1alpha1.Pool {
	p := &v1alpha1.Pool{Name: "p", Machine: v1alpha1.Machine{CPU: resource.MustParse(cpu), Memory: resource.MustParse(mem)}}
	if gpus > 0 {
		p.Machine.GPU = &v1alpha1.GPU{Count: gpus, Product: product}
	}
	return p
}

// TestCatalog pins the type each common shape gets on each cloud: the
// retail template's shapes and the usual A100, H100 and T4 machines.
func TestCatalog(t *testing.T) {
	tests := []struct {
		pool             *v1alpha1.Pool
		aks, eks, gke    string
		substitutedOnAKS bool
	}{
		{pool("2", "8Gi", 0, ""), "Standard_D2s_v5", "m6i.large", "e2-standard-2", false},
		{pool("4", "16Gi", 0, ""), "Standard_D4s_v5", "m6i.xlarge", "e2-standard-4", false},
		{pool("16", "64Gi", 0, ""), "Standard_D16s_v5", "m6i.4xlarge", "n2-standard-16", false},
		{pool("8", "64Gi", 0, ""), "Standard_E8s_v5", "r6i.2xlarge", "n2-highmem-8", false},
		{pool("3500m", "10Gi", 0, ""), "Standard_D4s_v5", "m6i.xlarge", "e2-standard-4", false},
		{pool("24", "96Gi", 1, "NVIDIA-L4"), "Standard_NC24ads_A100_v4", "g6.8xlarge", "g2-standard-32", true},
		{pool("4", "16Gi", 1, "NVIDIA-L4"), "Standard_NC24ads_A100_v4", "g6.xlarge", "g2-standard-4", true},
		{pool("4", "16Gi", 1, "Tesla-T4"), "Standard_NC4as_T4_v3", "g4dn.xlarge", "n1-highmem-4", false},
		{pool("12", "80Gi", 1, "NVIDIA-A100-SXM4-40GB"), "", "", "a2-highgpu-1g", false},
		{pool("24", "200Gi", 1, "NVIDIA-A100-80GB-PCIe"), "Standard_NC24ads_A100_v4", "", "", false},
		{pool("96", "680Gi", 8, "NVIDIA-A100-SXM4-40GB"), "Standard_ND96asr_v4", "p4d.24xlarge", "a2-highgpu-8g", false},
		{pool("96", "1100Gi", 8, "NVIDIA-A100-SXM4-80GB"), "Standard_ND96amsr_A100_v4", "p4de.24xlarge", "a2-ultragpu-8g", false},
		{pool("96", "1800Gi", 8, "NVIDIA-H100-80GB-HBM3"), "Standard_ND96isr_H100_v5", "p5.48xlarge", "a3-highgpu-8g", false},
		{pool("40", "300Gi", 1, "NVIDIA-H100-NVL"), "Standard_NC40ads_H100_v5", "", "", false},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			cloud cloud
			want  string
		}{{azure, tt.aks}, {aws, tt.eks}, {gcp, tt.gke}} {
			m, prob := resolveMachine(0, tt.pool, c.cloud)
			switch {
			case c.want == "" && prob == nil:
				t.Errorf("%s on %s: got %s, want no match", shape(tt.pool), c.cloud, m.Type)
			case c.want != "" && prob != nil:
				t.Errorf("%s on %s: %v", shape(tt.pool), c.cloud, prob)
			case m.Type != c.want:
				t.Errorf("%s on %s: got %s, want %s", shape(tt.pool), c.cloud, m.Type, c.want)
			}
			if c.cloud == azure && m.Substituted != tt.substitutedOnAKS {
				t.Errorf("%s on %s: substituted = %v", shape(tt.pool), c.cloud, m.Substituted)
			}
		}
	}
}

func TestCatalogProblems(t *testing.T) {
	tests := []struct {
		name  string
		pool  *v1alpha1.Pool
		cloud cloud
		want  problem.Problem
	}{{
		name:  "unknown GPU",
		pool:  pool("32", "256Gi", 1, "AMD-MI300X"),
		cloud: aws,
		want: problem.Problem{Object: problem.Object{Kind: "Pool", Name: "p"}, Field: "spec.pools[3].machine.instanceTypes.eks",
			Message: `berth does not recognise GPU product "AMD-MI300X", so its catalog cannot choose an EC2 instance type`,
			Fix:     "set spec.pools[3].machine.instanceTypes.eks to an EC2 instance type with 32 CPU, 256Gi memory and 1x AMD-MI300X"},
	}, {
		name:  "bigger than every machine",
		pool:  pool("512", "64Gi", 0, ""),
		cloud: gcp,
		want: problem.Problem{Object: problem.Object{Kind: "Pool", Name: "p"}, Field: "spec.pools[3].machine.instanceTypes.gke",
			Message: "no Compute Engine machine type in berth's catalog has 512 CPU and 64Gi memory",
			Fix:     "set spec.pools[3].machine.instanceTypes.gke to a Compute Engine machine type with at least that shape, or give the machine a shape the catalog lists (see docs/reference/instance-types.md)"},
	}, {
		name:  "a GPU the cloud does not sell",
		pool:  pool("8", "32Gi", 1, "NVIDIA-A10G"),
		cloud: azure,
		want: problem.Problem{Object: problem.Object{Kind: "Pool", Name: "p"}, Field: "spec.pools[3].machine.instanceTypes.aks",
			Message: "no Azure VM size in berth's catalog has 8 CPU, 32Gi memory and 1x NVIDIA-A10G",
			Fix:     "set spec.pools[3].machine.instanceTypes.aks to an Azure VM size with at least that shape, or give the machine a shape the catalog lists (see docs/reference/instance-types.md)"},
	}, {
		name:  "a GPU count no machine has",
		pool:  pool("8", "32Gi", 3, "NVIDIA-L4"),
		cloud: aws,
		want: problem.Problem{Object: problem.Object{Kind: "Pool", Name: "p"}, Field: "spec.pools[3].machine.instanceTypes.eks",
			Message: "no EC2 instance type in berth's catalog has 8 CPU, 32Gi memory and 3x NVIDIA-L4",
			Fix:     "set spec.pools[3].machine.instanceTypes.eks to an EC2 instance type with at least that shape, or give the machine a shape the catalog lists (see docs/reference/instance-types.md)"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, prob := resolveMachine(3, tt.pool, tt.cloud)
			if prob == nil {
				t.Fatal("no problem")
			}
			if diff := cmp.Diff(tt.want, *prob); diff != "" {
				t.Errorf("problem differs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCatalogErrorThroughExport checks the problem reaches the user with
// the pool, the field and the fix.
func TestCatalogErrorThroughExport(t *testing.T) {
	bp := loadBlueprint(t, base)
	bp.Spec.Pools[1].Machine.CPU = resource.MustParse("1000")
	for _, target := range []Target{AKS, EKS, GKE, Karpenter} {
		field := "spec.pools[1].machine.instanceTypes." + map[Target]string{AKS: "aks", EKS: "eks", GKE: "gke", Karpenter: "eks"}[target]
		checkProblems(t, problemsOf(t, bp, target), []wantProblem{{"work", field, "in berth's catalog has 1000 CPU and 64Gi memory", "set " + field + " to a"}})
	}
}

func TestExplicitInstanceTypes(t *testing.T) {
	p := pool("8", "32Gi", 1, "Tesla-T4")
	p.Machine.InstanceTypes = &v1alpha1.InstanceTypes{AKS: "Standard_NC8as_T4_v3", EKS: "g4dn.2xlarge", GKE: "n1-custom-8-40960"}

	m, prob := resolveMachine(0, p, aws)
	if prob != nil || m.Type != "g4dn.2xlarge" || m.Known == nil || len(m.Notes) != 0 {
		t.Errorf("eks: got %+v, %v; want g4dn.2xlarge, known, same shape so no notes", m, prob)
	}
	m, _ = resolveMachine(0, p, azure)
	if m.Type != "Standard_NC8as_T4_v3" || len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "56 GiB, more than the blueprint's machine") {
		t.Errorf("aks: got %+v; want a note that the VM is bigger", m)
	}
	m, _ = resolveMachine(0, p, gcp)
	if m.Type != "n1-custom-8-40960" || m.Known != nil || len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "does not list Compute Engine machine type n1-custom-8-40960") {
		t.Errorf("gke: got %+v; want the named type and a note that berth cannot check it", m)
	}

	// A named type with other GPUs than the blueprint's is noted.
	p.Machine.InstanceTypes.EKS = "g6.xlarge"
	m, _ = resolveMachine(0, p, aws)
	if want := "g6.xlarge has L4 24GB GPUs; the blueprint's machine has Tesla-T4."; !contains(m.Notes, want) {
		t.Errorf("notes %q lack %q", m.Notes, want)
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func TestParseGPUProduct(t *testing.T) {
	tests := map[string]gpuModel{
		"NVIDIA-L4":             {"L4", 0},
		"NVIDIA-L40S":           {"L40S", 0},
		"Tesla-T4":              {"T4", 0},
		"NVIDIA-A100-SXM4-40GB": {"A100", 40},
		"NVIDIA-A100-80GB-PCIe": {"A100", 80},
		"NVIDIA-H100-80GB-HBM3": {"H100", 80},
		"NVIDIA-A10G":           {"A10G", 0},
		"nvidia-h100-nvl":       {"H100", 0},
		"AMD-MI300X":            {"", 0},
	}
	for product, want := range tests {
		if got := parseGPUProduct(product); got != want {
			t.Errorf("parseGPUProduct(%q) = %+v, want %+v", product, got, want)
		}
	}
}

// TestDocsCatalog keeps the catalog table of docs/reference/instance-types.md
// in step with the data: every type berth can choose is listed in a row of
// it.
func TestDocsCatalog(t *testing.T) {
	const page = "docs/reference/instance-types.md"
	text, err := os.ReadFile("../../" + page)
	if err != nil {
		t.Fatal(err)
	}
	var rows strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "|") {
			rows.WriteString(line + "\n")
		}
	}
	for c, types := range catalog {
		for _, it := range types {
			if !strings.Contains(rows.String(), "`"+it.Name+"`") {
				t.Errorf("%s does not list %s type %s in its table", page, c, it.Name)
			}
		}
	}
}
