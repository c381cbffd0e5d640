package audit_test

import (
	"fmt"
	"os"

	"berth.io/berth/internal/audit"
)

// Audit a manifest file: every finding names its rule, the object, where
// it is written and the fix. (The file names PriorityClass training-low
// without defining it, so whether that class preempts is not judged.)
func Example() {
	inv, err := audit.LoadFiles([]string{"testdata/broken/training.yaml"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	report := audit.Check(inv, audit.Options{Source: "training.yaml"})
	for _, f := range report.Findings {
		fmt.Printf("%s %s %s\n", f.Severity, f.Rule, f.Where())
	}
	audit.Write(os.Stdout, &audit.Report{Findings: report.Findings[:1], Objects: report.Objects, Source: report.Source}, audit.Table)
	// Output:
	// error berth/gpu-quota-missing testdata/broken/training.yaml:5
	// error berth/spot-checkpoint testdata/broken/training.yaml:8
	// error berth/gpu-limit testdata/broken/training.yaml:18
	// error berth/gpu-quota-missing testdata/broken/training.yaml:23
	// warning berth/limitrange-missing testdata/broken/training.yaml:5
	// warning berth/spot-disruption-policy testdata/broken/training.yaml:6
	// warning berth/limitrange-missing testdata/broken/training.yaml:23
	// error  berth/gpu-quota-missing  Namespace/ml  (testdata/broken/training.yaml:5)
	//        runs 1 GPU workload(s) (Job finetune) but no ResourceQuota caps requests.nvidia.com/gpu, so it can take every GPU in the cluster
	//        fix: add a ResourceQuota in ml with hard requests.nvidia.com/gpu (berth: the team's quota.gpu)
	//
	// 1 error, 0 warnings in 2 objects (training.yaml)
}
