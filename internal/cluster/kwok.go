package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	"sigs.k8s.io/kwok/pkg/utils/client"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/cluster/stages"
	"berth.io/berth/internal/simtime"
)

// kwokStages are KWOK's own default stages: nodes initialise at once and
// heartbeat through leases; pods become Ready as soon as they are bound,
// Job pods complete, and deleted pods go away. berth's node stages are
// KWOK's, skipping kubelets `berth node stop` stopped. berth's stages replace the
// pod-ready one so that a pod with a readiness probe starts unready and
// becomes Ready when its probe would first succeed, and a pod whose image
// cannot be pulled waits in ImagePullBackOff; and they replace pod-complete
// so that a Job pod annotated berth.io/duration runs that long before it
// completes (see package stages).
var kwokStages = []string{
	stages.NodeInitialize,
	stages.NodeHeartbeat,
	stages.PodReady,
	stages.PodStartProbed,
	stages.PodProbeReady,
	stages.PodImagePullFailed,
	stages.PodComplete,
	stages.PodCompleteAfterDuration,
	podfast.DefaultPodDelete,
}

// runKWOK runs KWOK's node and pod controllers for every node annotated
// KubeletAnnotation=fake, on clk: the delays of its stages (a Job pod's
// run time) count that clock, and the times its stages write (a pod's
// startTime, a container's finishedAt) are that clock's.
//
// A non-nil sent counts KWOK's requests from when they leave: on a
// rehearsal's clock, a stage played when a timer fires makes a request
// that nothing else saw coming.
func runKWOK(ctx context.Context, kubeconfig string, clk clock.Clock, sent *simtime.Counter) error {
	stages := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, raw := range kwokStages {
		s, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			return fmt.Errorf("kwok stage: %w", err)
		}
		stages[s.Spec.ResourceRef] = append(stages[s.Spec.ResourceRef], s)
	}
	cs, err := client.NewClientset("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kwok clients: %w", err)
	}
	// KWOK's own REST config: unthrottled, and with the unstructured
	// serializer its patching client needs.
	cfg, err := cs.ToRESTConfig()
	if err != nil {
		return err
	}
	if sent != nil {
		// The clientset keeps this config and makes every client of
		// KWOK's from it, after this. KWOK retries a refused request
		// through its own delaying queue, on the rehearsal's clock.
		cfg.Wrap(sent.RoundTripper)
		cfg.UserAgent += " " + simtime.OnClockAgent
	}
	dynamicClient, err := cs.ToDynamicClient()
	if err != nil {
		return err
	}
	restMapper, err := cs.ToRESTMapper()
	if err != nil {
		return err
	}
	restClient, err := rest.RESTClientFor(cfg)
	if err != nil {
		return err
	}
	// Its typed client, which watches every bound pod and patches their
	// status, speaks protobuf (see protobuf).
	typed, err := kubernetes.NewForConfig(protobuf(cfg))
	if err != nil {
		return err
	}
	kwokTyped, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctr, err := controllers.NewController(controllers.Config{
		Clock: clk,
		// KWOK's templates read the time through Now, which is wall time
		// unless told otherwise.
		FuncMap:                           gotpl.FuncMap{"Now": func() string { return clk.Now().Format(time.RFC3339Nano) }},
		DynamicClient:                     dynamicClient,
		RESTClient:                        restClient,
		RESTMapper:                        restMapper,
		ImpersonatingDynamicClient:        cs.ToImpersonatingDynamicClient(),
		ImpersonatingTypedClient:          cs.ToImpersonatingTypedClient(),
		TypedClient:                       typed,
		TypedKwokClient:                   kwokTyped,
		ManageNodesWithAnnotationSelector: v1alpha1.AnnotationKWOKNode + "=fake",
		CIDR:                              "10.244.0.0/16",
		NodeIP:                            "10.240.0.1",
		LocalStages:                       stages,
		NodePlayStageParallelism:          playParallelism(sent, 8),
		PodPlayStageParallelism:           playParallelism(sent, 16),
		// berth renews the leases itself (internal/kubelets), so that a stopped
		// kubelet's lease expires.
		NodeLeaseDurationSeconds:  0,
		PodsOnNodeSyncParallelism: 4,
		ID:                        "berth",
	})
	if err != nil {
		return fmt.Errorf("kwok controller: %w", err)
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("starting kwok controller: %w", err)
	}
	<-ctx.Done()
	return nil
}

// playParallelism is how many stages KWOK plays at once: n on the wall
// clock, one on a rehearsal's (sent non-nil), where a stage takes no
// trace time and the pods a moment changes reach the API server, and
// the controllers watching them, in the order their timers fired.
func playParallelism(sent *simtime.Counter, n uint) uint {
	if sent != nil {
		return 1
	}
	return n
}
