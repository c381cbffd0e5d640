package export

// The catalog: instance types berth can choose for a pool on each cloud
// when the blueprint names none in machine.instanceTypes. It is data, not
// logic; docs/reference/instance-types.md renders it as a table, and a
// test keeps the two in step.
//
// The rule (resolve in machine.go): among the cloud's types with exactly
// the pool's GPU count and GPU model, take the smallest, fewest vCPUs
// first, then least memory, that has at least the machine's CPU and
// memory. Shapes are the cloud's published vCPUs and memory (GiB; Compute
// Engine's "GB" are the same binary unit). Only x86-64 types are listed.

// cloud is a provider whose instance types the catalog lists. EKS and
// Karpenter share aws.
type cloud string

const (
	azure cloud = "aks"
	aws   cloud = "eks"
	gcp   cloud = "gke"
)

// instanceType is one machine a cloud sells.
type instanceType struct {
	Name   string
	CPU    int64 // vCPUs
	Memory int64 // GiB
	GPUs   int32
	GPU    gpuModel // zero without GPUs
	// Accelerator is GKE's --accelerator type for the GPUs; GKE only.
	Accelerator string
}

func vm(name string, cpu, memGiB int64) instanceType {
	return instanceType{Name: name, CPU: cpu, Memory: memGiB}
}

func gpuVM(name string, cpu, memGiB int64, gpus int32, model gpuModel) instanceType {
	return instanceType{Name: name, CPU: cpu, Memory: memGiB, GPUs: gpus, GPU: model, Accelerator: model.gkeAccelerator()}
}

// GPU models the catalog knows, by family and memory per GPU.
var (
	l4      = gpuModel{Family: "L4", MemoryGB: 24}
	t4      = gpuModel{Family: "T4", MemoryGB: 16}
	a10g    = gpuModel{Family: "A10G", MemoryGB: 24}
	a100    = gpuModel{Family: "A100", MemoryGB: 40}
	a100x80 = gpuModel{Family: "A100", MemoryGB: 80}
	h100    = gpuModel{Family: "H100", MemoryGB: 80}
	h100NVL = gpuModel{Family: "H100", MemoryGB: 94}
)

var catalog = map[cloud][]instanceType{
	azure: {
		vm("Standard_D2s_v5", 2, 8), vm("Standard_D4s_v5", 4, 16), vm("Standard_D8s_v5", 8, 32),
		vm("Standard_D16s_v5", 16, 64), vm("Standard_D32s_v5", 32, 128), vm("Standard_D48s_v5", 48, 192),
		vm("Standard_D64s_v5", 64, 256), vm("Standard_D96s_v5", 96, 384),
		vm("Standard_E2s_v5", 2, 16), vm("Standard_E4s_v5", 4, 32), vm("Standard_E8s_v5", 8, 64),
		vm("Standard_E16s_v5", 16, 128), vm("Standard_E32s_v5", 32, 256), vm("Standard_E48s_v5", 48, 384),
		vm("Standard_E64s_v5", 64, 512), vm("Standard_E96s_v5", 96, 672),
		gpuVM("Standard_NC4as_T4_v3", 4, 28, 1, t4), gpuVM("Standard_NC8as_T4_v3", 8, 56, 1, t4),
		gpuVM("Standard_NC16as_T4_v3", 16, 110, 1, t4), gpuVM("Standard_NC64as_T4_v3", 64, 440, 4, t4),
		gpuVM("Standard_NC24ads_A100_v4", 24, 220, 1, a100x80), gpuVM("Standard_NC48ads_A100_v4", 48, 440, 2, a100x80),
		gpuVM("Standard_NC96ads_A100_v4", 96, 880, 4, a100x80),
		gpuVM("Standard_ND96asr_v4", 96, 900, 8, a100), gpuVM("Standard_ND96amsr_A100_v4", 96, 1900, 8, a100x80),
		gpuVM("Standard_NC40ads_H100_v5", 40, 320, 1, h100NVL), gpuVM("Standard_NC80adis_H100_v5", 80, 640, 2, h100NVL),
		gpuVM("Standard_ND96isr_H100_v5", 96, 1900, 8, h100),
	},
	aws: {
		vm("m6i.large", 2, 8), vm("m6i.xlarge", 4, 16), vm("m6i.2xlarge", 8, 32), vm("m6i.4xlarge", 16, 64),
		vm("m6i.8xlarge", 32, 128), vm("m6i.12xlarge", 48, 192), vm("m6i.16xlarge", 64, 256),
		vm("m6i.24xlarge", 96, 384), vm("m6i.32xlarge", 128, 512),
		vm("r6i.large", 2, 16), vm("r6i.xlarge", 4, 32), vm("r6i.2xlarge", 8, 64), vm("r6i.4xlarge", 16, 128),
		vm("r6i.8xlarge", 32, 256), vm("r6i.12xlarge", 48, 384), vm("r6i.16xlarge", 64, 512),
		vm("r6i.24xlarge", 96, 768), vm("r6i.32xlarge", 128, 1024),
		gpuVM("g6.xlarge", 4, 16, 1, l4), gpuVM("g6.2xlarge", 8, 32, 1, l4), gpuVM("g6.4xlarge", 16, 64, 1, l4),
		gpuVM("g6.8xlarge", 32, 128, 1, l4), gpuVM("g6.16xlarge", 64, 256, 1, l4),
		gpuVM("g6.12xlarge", 48, 192, 4, l4), gpuVM("g6.24xlarge", 96, 384, 4, l4), gpuVM("g6.48xlarge", 192, 768, 8, l4),
		gpuVM("g4dn.xlarge", 4, 16, 1, t4), gpuVM("g4dn.2xlarge", 8, 32, 1, t4), gpuVM("g4dn.4xlarge", 16, 64, 1, t4),
		gpuVM("g4dn.8xlarge", 32, 128, 1, t4), gpuVM("g4dn.16xlarge", 64, 256, 1, t4),
		gpuVM("g4dn.12xlarge", 48, 192, 4, t4), gpuVM("g4dn.metal", 96, 384, 8, t4),
		gpuVM("g5.xlarge", 4, 16, 1, a10g), gpuVM("g5.2xlarge", 8, 32, 1, a10g), gpuVM("g5.4xlarge", 16, 64, 1, a10g),
		gpuVM("g5.8xlarge", 32, 128, 1, a10g), gpuVM("g5.16xlarge", 64, 256, 1, a10g),
		gpuVM("g5.12xlarge", 48, 192, 4, a10g), gpuVM("g5.24xlarge", 96, 384, 4, a10g), gpuVM("g5.48xlarge", 192, 768, 8, a10g),
		gpuVM("p4d.24xlarge", 96, 1152, 8, a100), gpuVM("p4de.24xlarge", 96, 1152, 8, a100x80),
		gpuVM("p5.48xlarge", 192, 2048, 8, h100),
	},
	gcp: {
		vm("e2-standard-2", 2, 8), vm("e2-standard-4", 4, 16), vm("e2-standard-8", 8, 32),
		vm("n2-standard-16", 16, 64), vm("n2-standard-32", 32, 128), vm("n2-standard-48", 48, 192),
		vm("n2-standard-64", 64, 256), vm("n2-standard-80", 80, 320), vm("n2-standard-96", 96, 384),
		vm("n2-standard-128", 128, 512),
		vm("n2-highmem-2", 2, 16), vm("n2-highmem-4", 4, 32), vm("n2-highmem-8", 8, 64), vm("n2-highmem-16", 16, 128),
		vm("n2-highmem-32", 32, 256), vm("n2-highmem-48", 48, 384), vm("n2-highmem-64", 64, 512),
		vm("n2-highmem-80", 80, 640), vm("n2-highmem-96", 96, 768), vm("n2-highmem-128", 128, 864),
		gpuVM("g2-standard-4", 4, 16, 1, l4), gpuVM("g2-standard-8", 8, 32, 1, l4), gpuVM("g2-standard-12", 12, 48, 1, l4),
		gpuVM("g2-standard-16", 16, 64, 1, l4), gpuVM("g2-standard-32", 32, 128, 1, l4),
		gpuVM("g2-standard-24", 24, 96, 2, l4), gpuVM("g2-standard-48", 48, 192, 4, l4), gpuVM("g2-standard-96", 96, 384, 8, l4),
		// N1 machines take 1, 2 or 4 attached T4s.
		gpuVM("n1-standard-4", 4, 15, 1, t4), gpuVM("n1-standard-8", 8, 30, 1, t4), gpuVM("n1-standard-16", 16, 60, 1, t4),
		gpuVM("n1-standard-32", 32, 120, 1, t4), gpuVM("n1-highmem-4", 4, 26, 1, t4), gpuVM("n1-highmem-8", 8, 52, 1, t4),
		gpuVM("n1-highmem-16", 16, 104, 1, t4), gpuVM("n1-highmem-32", 32, 208, 1, t4),
		gpuVM("n1-standard-8", 8, 30, 2, t4), gpuVM("n1-standard-16", 16, 60, 2, t4), gpuVM("n1-standard-32", 32, 120, 2, t4),
		gpuVM("n1-highmem-16", 16, 104, 2, t4), gpuVM("n1-highmem-32", 32, 208, 2, t4),
		gpuVM("n1-standard-16", 16, 60, 4, t4), gpuVM("n1-standard-32", 32, 120, 4, t4), gpuVM("n1-standard-64", 64, 240, 4, t4),
		gpuVM("n1-highmem-32", 32, 208, 4, t4), gpuVM("n1-highmem-64", 64, 416, 4, t4),
		gpuVM("a2-highgpu-1g", 12, 85, 1, a100), gpuVM("a2-highgpu-2g", 24, 170, 2, a100),
		gpuVM("a2-highgpu-4g", 48, 340, 4, a100), gpuVM("a2-highgpu-8g", 96, 680, 8, a100),
		gpuVM("a2-megagpu-16g", 96, 1360, 16, a100),
		gpuVM("a2-ultragpu-1g", 12, 170, 1, a100x80), gpuVM("a2-ultragpu-2g", 24, 340, 2, a100x80),
		gpuVM("a2-ultragpu-4g", 48, 680, 4, a100x80), gpuVM("a2-ultragpu-8g", 96, 1360, 8, a100x80),
		gpuVM("a3-highgpu-8g", 208, 1872, 8, h100),
	},
}

// substitute is a GPU model a cloud does not sell at all, and the model
// berth uses there instead. It is only ever a model at least as capable,
// and the output says so next to the pool.
type substitute struct {
	model gpuModel
	why   string
}

var substitutes = map[cloud]map[string]substitute{
	azure: {
		"L4": {a100x80, "Azure sells no NVIDIA L4 VM size"},
	},
}

// lookupType finds a type by name; several GCP rows share a name (N1 with
// different T4 counts), so gpus picks among them.
func lookupType(c cloud, name string, gpus int32) (instanceType, bool) {
	var found instanceType
	ok := false
	for _, t := range catalog[c] {
		if t.Name != name {
			continue
		}
		if !ok || t.GPUs == gpus {
			found, ok = t, true
		}
	}
	return found, ok
}
