package export_test

import (
	"bytes"
	"fmt"
	"log"
	"strings"

	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/export"
)

// Export the minimal template as an eksctl ClusterConfig: each pool's
// machine becomes the smallest EC2 instance type with its shape.
func ExampleExport() {
	bp, err := blueprint.LoadTemplate("minimal")
	if err != nil {
		log.Fatal(err)
	}
	target, err := export.ParseTarget("eks")
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	if err := export.Export(&out, bp, target); err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "- name:") || strings.Contains(line, "instanceType:") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// - name: system
	// instanceType: m6i.large
	// - name: workers
	// instanceType: m6i.2xlarge
	// - name: aws-ebs-csi-driver
}
