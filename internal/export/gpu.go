package export

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// gpuModel is what matters about a GPU when choosing a machine: its family
// and, when known, its memory in GB.
type gpuModel struct {
	Family   string
	MemoryGB int // 0: unknown, matches any
}

func (m gpuModel) String() string {
	if m.MemoryGB == 0 {
		return m.Family
	}
	return fmt.Sprintf("%s %dGB", m.Family, m.MemoryGB)
}

// gpuFamilies are the families parseGPUProduct recognises, longest first
// so that "L40S" is not read as "L4".
var gpuFamilies = []string{"A100", "A10G", "H100", "H200", "B200", "L40S", "V100", "A10", "L40", "L4", "T4"}

var gpuMemoryRE = regexp.MustCompile(`^([0-9]+)GB$`)

// parseGPUProduct reads the family and memory from a product label as
// NVIDIA's GPU feature discovery writes it: "NVIDIA-L4",
// "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "Tesla-T4". The family
// is empty when the product names none berth knows.
func parseGPUProduct(product string) gpuModel {
	var m gpuModel
	tokens := strings.FieldsFunc(strings.ToUpper(product), func(r rune) bool {
		return r == '-' || r == '_' || r == ' ' || r == '.'
	})
	for _, tok := range tokens {
		if m.Family == "" {
			for _, f := range gpuFamilies {
				if tok == f {
					m.Family = f
					break
				}
			}
		}
		if g := gpuMemoryRE.FindStringSubmatch(tok); g != nil && m.MemoryGB == 0 {
			m.MemoryGB, _ = strconv.Atoi(g[1])
		}
	}
	return m
}

// matches reports whether a machine's GPU of model have satisfies a
// blueprint asking for want: the same family, and the same memory when
// want names one.
func (want gpuModel) matches(have gpuModel) bool {
	return want.Family == have.Family && (want.MemoryGB == 0 || want.MemoryGB == have.MemoryGB)
}

// gkeAccelerator is GKE's accelerator type for the model, or "" when GKE
// has none.
func (m gpuModel) gkeAccelerator() string {
	switch {
	case m.Family == "L4":
		return "nvidia-l4"
	case m.Family == "T4":
		return "nvidia-tesla-t4"
	case m.Family == "A100" && m.MemoryGB == 80:
		return "nvidia-a100-80gb"
	case m.Family == "A100" && m.MemoryGB == 40:
		return "nvidia-tesla-a100"
	case m.Family == "H100" && m.MemoryGB == 80:
		return "nvidia-h100-80gb"
	case m.Family == "V100":
		return "nvidia-tesla-v100"
	}
	return ""
}
