// Package e2e proves berth's promises on the real control plane: one
// embedded cluster for the whole package (TestMain), one namespace per
// test. It is the only package that links the control plane.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/storage"
	"berth.io/berth/test/harness"
)

// Namespaces of testdata/e2e.yaml the tests share: a system namespace
// (add-ons, spec.nodeName) and the namespace of a team with GPUs.
const (
	systemNS = "e2e-system"
	gpuLab   = "gpu-lab"
)

var (
	cfg    *rest.Config
	client kubernetes.Interface
	bp     *v1alpha1.Blueprint
	// clients reach the cluster as berth apply does.
	clients apply.Client
	// kubeconfig is the e2e cluster's admin kubeconfig, for CLI tests.
	kubeconfig string
)

// applyBlueprint plans and applies b as `berth apply` does.
func applyBlueprint(ctx context.Context, b *v1alpha1.Blueprint, o apply.Options) error {
	owned, err := storage.Owned(b)
	if err != nil {
		return err
	}
	o.Owned = append(o.Owned, owned...)
	_, err = apply.Run(ctx, clients, b, apply.RunOptions{Plan: o, Exec: apply.ExecOptions{DrainTimeout: time.Minute}})
	return err
}

// TestMain starts the suite's cluster, unless the test binary was
// started as berth (harness.Command).
func TestMain(m *testing.M) { harness.Main(m, run) }

func run(m *testing.M) int {
	var err error
	bp, _, err = blueprint.Load("testdata/e2e.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "berth-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	c, err := cluster.Start(context.Background(), cluster.Options{
		Name:      "e2e",
		StateDir:  dir,
		Blueprint: bp,
		// Four GPUs in all: two on-demand, two spot.
		Nodes:    map[string]int32{"gpu": 2, "spot-gpu": 2},
		Progress: os.Stderr,
		// fsync stays on: the suite runs on the same settings users get.
		Timeout: 3 * time.Minute,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the e2e cluster:", err)
		if log, rerr := os.ReadFile(cluster.State{Dir: dir}.LogFile()); rerr == nil {
			fmt.Fprintf(os.Stderr, "--- control plane log (tail) ---\n%s\n", tail(log, 4000))
		}
		return 1
	}
	defer c.Stop()
	cfg = c.Config
	kubeconfig = c.State.Kubeconfig()
	client = kubernetes.NewForConfigOrDie(cfg)
	clients = apply.Client{Kube: client, Dynamic: dynamic.NewForConfigOrDie(cfg)}
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}, metav1.CreateOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "creating the e2e system namespace:", err)
		return 1
	}
	if err := applyBlueprint(context.Background(), bp, apply.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "applying the e2e blueprint:", err)
		return 1
	}
	if err := waitForGuardrails(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
