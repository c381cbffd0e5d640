package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/apply"
	"berth.io/berth/internal/karpenter"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/recorded"
	"berth.io/berth/internal/storage"
)

// target is the cluster a command talks to.
type target struct {
	context string
	config  *rest.Config
	client  apply.Client
}

func (t *target) String() string { return fmt.Sprintf("context %s (%s)", t.context, t.config.Host) }

// connect resolves --kubeconfig and --context as kubectl does and checks
// that the API server answers, so that a missing or stopped cluster is
// reported once, plainly, before any work starts.
func (k *kubeFlags) connect(ctx context.Context) (*target, error) {
	loader := k.loader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, problem.Errorf("pass a readable --kubeconfig", "reading kubeconfig: %w", err)
	}
	t := &target{context: raw.CurrentContext}
	if k.context != "" {
		t.context = k.context
	}
	if t.config, err = loader.ClientConfig(); err != nil {
		return nil, problem.Errorf("start a local one with `berth up`, or pass --kubeconfig/--context", "no cluster to talk to: %w", err)
	}
	t.config.QPS, t.config.Burst = commandQPS, commandBurst
	if t.client.Kube, err = protobufClient(t.config); err != nil {
		return nil, err
	}
	if t.client.Dynamic, err = dynamic.NewForConfig(t.config); err != nil {
		return nil, err
	}
	probe, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := t.client.Kube.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(probe); err != nil {
		hint := "check the cluster is running and reachable from here"
		if strings.HasPrefix(t.context, "berth-") {
			hint = fmt.Sprintf("start it with `berth up --name %s`", strings.TrimPrefix(t.context, "berth-"))
		}
		return nil, problem.Errorf(fmt.Sprintf("%s, or pass --kubeconfig/--context", hint), "cannot reach the API server of %s: %w", t, err)
	}
	return t, nil
}

// contextName is the kubeconfig context the command will use, or "" when
// the kubeconfig cannot be read (connect reports that).
func (k *kubeFlags) contextName() string {
	if k.context != "" {
		return k.context
	}
	raw, err := k.loader().RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// clusterBlueprint is the blueprint a command that reads a cluster
// compares it with: -f FILE; else ./berth.yaml; else the blueprint the
// cluster recorded (kube-system/berth-blueprint-NAME, which `berth up`
// writes for the blueprint it starts from and `berth apply` for the one
// it applies, whatever the state directory or the cluster). nil when the
// cluster records none; an error naming them when it records several,
// which only -f can choose between. Its source says which it read.
func clusterBlueprint(ctx context.Context, client kubernetes.Interface, file string, warn func(problem.Problem)) (*loadedBlueprint, error) {
	if file != "" {
		return loadBlueprint(file, warn)
	}
	if _, err := os.Stat(defaultBlueprintFile); err == nil {
		return loadBlueprint(defaultBlueprintFile, warn)
	}
	bps, err := recorded.List(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	switch len(bps) {
	case 0:
		return nil, nil
	case 1:
		return &loadedBlueprint{Blueprint: bps[0], source: recordedSource(bps[0].Metadata.Name)}, nil
	}
	var names []string
	for _, bp := range bps {
		names = append(names, bp.Metadata.Name)
	}
	return nil, problem.Errorf("pass -f FILE with the blueprint to compare the cluster with",
		"the cluster records %d blueprints (%s, in kube-system/%s*), and which one describes it is not known", len(bps), strings.Join(names, ", "), recorded.ConfigMapPrefix)
}

// planBlueprint is the blueprint plan and apply use: -f FILE; else
// ./berth.yaml; else, for a berth local cluster, the one it was started
// from; else the default template. It needs no cluster, so that a
// blueprint's problems are reported before any connection.
func planBlueprint(file, contextName string, warn func(problem.Problem)) (*loadedBlueprint, error) {
	if file == "" {
		if _, err := os.Stat(defaultBlueprintFile); err != nil {
			if local, ok := strings.CutPrefix(contextName, "berth-"); ok {
				saved := filepath.Join(stateDirFor(local), "blueprint.yaml")
				if _, err := os.Stat(saved); err == nil {
					file = saved
				}
			}
		}
	}
	return loadBlueprint(file, warn)
}

// errUnreachable marks an error of a cluster that did not answer.
var errUnreachable = errors.New("the cluster did not answer")

// recordedSource names a recorded blueprint as a command says where its
// blueprint came from.
func recordedSource(name string) string {
	return "the cluster's record kube-system/" + recorded.ConfigMapName(name)
}

// commandQPS and commandBurst pace a command's requests: client-go's
// defaults (5 and 10) would pace the pages of a large cluster's lists.
const (
	commandQPS   = 100
	commandBurst = 200
)

// protobufClient is a clientset that speaks protobuf, as kubectl's typed
// paths and the control plane's own components do: a 150,000-pod list
// decodes several times faster than from JSON. Dynamic clients (apply,
// custom resources) speak JSON.
func protobufClient(c *rest.Config) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(c)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return kubernetes.NewForConfig(cfg)
}

// computePlan is apply.Compute with what the plan carries beyond the
// blueprint's own objects (ownedObjects).
func computePlan(ctx context.Context, t *target, bp *v1alpha1.Blueprint, o apply.Options) (*apply.Plan, error) {
	var err error
	if o.Owned, err = ownedObjects(bp); err != nil {
		return nil, err
	}
	return apply.Compute(ctx, t.client, bp, o)
}

// ownedObjects are the objects a plan carries beyond the blueprint's own,
// planned on a local cluster only: the storage classes and their CSI
// drivers, which berth provisions there (internal/storage); and, for a
// blueprint that provisions with Karpenter, Karpenter's node classes and
// NodePools, so that plan, apply and audit see a NodePool changed by
// hand, and apply prunes one that left the blueprint.
func ownedObjects(bp *v1alpha1.Blueprint) ([]apply.Owned, error) {
	owned, err := storage.Owned(bp)
	if err != nil || !bp.Spec.UsesKarpenter() {
		return owned, err
	}
	nodePools, err := karpenter.Owned(bp)
	return append(owned, nodePools...), err
}
