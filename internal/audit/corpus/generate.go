package corpus

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth.io/berth/api/v1alpha1"
)

var (
	zones   = []string{"zone-1", "zone-2", "zone-3"}
	created = metav1.NewTime(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	never   = corev1.PreemptNever
)

type generator struct {
	s          Spec
	nWorkloads int
	teams      int
	cpuNodes   int
	gpuNodes   int
	spotNodes  int
}

func newGenerator(s Spec) *generator {
	g := &generator{s: s, nWorkloads: (s.Pods + s.PodsPerWorkload - 1) / s.PodsPerWorkload}
	g.teams = max(1, g.nWorkloads/30)
	g.gpuNodes, g.spotNodes = s.Nodes/4, s.Nodes/10
	g.cpuNodes = s.Nodes - 3 - g.gpuNodes - g.spotNodes
	return g
}

func uid(kind string, i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", len(kind), i))
}

func (g *generator) team(w int) string { return fmt.Sprintf("team-%02d", w%g.teams) }

// serving reports whether workload w is a Deployment (else a Job).
func serving(w int) bool { return w%3 != 2 }

func (g *generator) nodes() []any {
	var out []any
	add := func(pool string, n int, cpu, mem string, gpus int, spot bool, taints ...corev1.Taint) {
		for i := range n {
			name := fmt.Sprintf("%s-%05d", pool, i)
			zone := zones[i%len(zones)]
			labels := map[string]string{
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"node.kubernetes.io/instance-type": pool + "-standard", "topology.kubernetes.io/zone": zone,
				"topology.kubernetes.io/region": "region-1", v1alpha1.LabelPool: pool, v1alpha1.LabelAgentPool: pool,
			}
			capacity := corev1.ResourceList{"cpu": resource.MustParse(cpu), "memory": resource.MustParse(mem), "pods": resource.MustParse("110"), "ephemeral-storage": resource.MustParse("200Gi")}
			if gpus > 0 {
				labels[v1alpha1.LabelGPUProduct] = "NVIDIA-L4"
				labels[v1alpha1.LabelGPUCount] = fmt.Sprint(gpus)
				capacity[v1alpha1.ResourceNVIDIAGPU] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
			}
			if spot {
				labels[v1alpha1.LabelCapacity] = "Spot"
			}
			if pool == "system" {
				labels[v1alpha1.LabelMode] = "System"
			}
			var conds []corev1.NodeCondition
			for _, c := range []corev1.NodeConditionType{"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"} {
				st, reason := corev1.ConditionFalse, "KubeletHasSufficient"+string(c)
				if c == "Ready" {
					st, reason = corev1.ConditionTrue, "KubeletReady"
				}
				conds = append(conds, corev1.NodeCondition{Type: c, Status: st, Reason: reason, Message: "kubelet is posting ready status", LastHeartbeatTime: created, LastTransitionTime: created})
			}
			var images []corev1.ContainerImage
			for j := range 5 {
				images = append(images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example.com/team/image-%d@sha256:%064x", j, j), fmt.Sprintf("registry.example.com/team/image-%d:v1.%d", j, j)}, SizeBytes: int64(100_000_000 * (j + 1))})
			}
			out = append(out, &corev1.Node{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
				ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid("Node", len(out)), ResourceVersion: "1000", CreationTimestamp: created, Labels: labels, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
				Spec:       corev1.NodeSpec{Taints: taints, ProviderID: "berth://" + name, PodCIDR: fmt.Sprintf("10.%d.%d.0/24", len(out)/256, len(out)%256)},
				Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, Conditions: conds, Images: images,
					Addresses: []corev1.NodeAddress{{Type: "InternalIP", Address: fmt.Sprintf("10.240.%d.%d", len(out)/256, len(out)%256)}, {Type: "Hostname", Address: name}},
					NodeInfo:  corev1.NodeSystemInfo{MachineID: string(uid("machine", len(out))), KernelVersion: "6.8.0", OSImage: "Ubuntu 24.04 LTS", ContainerRuntimeVersion: "containerd://2.0.0", KubeletVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64"}},
			})
		}
	}
	gpuTaint := corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	add("system", 3, "4", "16Gi", 0, false, corev1.Taint{Key: v1alpha1.TaintCriticalAddonsOnly, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	add("cpu", g.cpuNodes, "16", "64Gi", 0, false)
	add("gpu", g.gpuNodes, "96", "384Gi", 8, false, gpuTaint)
	add("spot-gpu", g.spotNodes, "96", "384Gi", 8, true, gpuTaint, corev1.Taint{Key: v1alpha1.LabelCapacity, Value: "spot", Effect: corev1.TaintEffectNoSchedule})
	return out
}

func (g *generator) policy() []any {
	out := []any{
		&schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"}, ObjectMeta: metav1.ObjectMeta{Name: "inference-high"}, Value: 100000},
		&schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"}, ObjectMeta: metav1.ObjectMeta{Name: "training-low"}, Value: 1000, PreemptionPolicy: &never},
	}
	for t := range g.teams {
		ns := fmt.Sprintf("team-%02d", t)
		out = append(out,
			&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1alpha1.LabelTeam: ns}}},
			&corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"}, ObjectMeta: metav1.ObjectMeta{Name: "team-quota", Namespace: ns},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("800"), "requests.cpu": resource.MustParse("20000")}}},
			&corev1.LimitRange{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"}, ObjectMeta: metav1.ObjectMeta{Name: "team-defaults", Namespace: ns},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
					Default: corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")}, DefaultRequest: corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("512Mi")}}}}})
	}
	for w := range g.nWorkloads {
		if !serving(w) || w%50 == 0 {
			continue // every fiftieth serving workload has no budget
		}
		min := intstr.FromInt32(1)
		if w%97 == 0 {
			min = intstr.FromInt32(int32(g.s.PodsPerWorkload)) // and some block every drain
		}
		out = append(out, &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("serve-%d", w), Namespace: g.team(w)},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("serve-%d", w)}}}})
	}
	return out
}

// template is workload w's pod template.
func (g *generator) template(w int) corev1.PodTemplateSpec {
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("8Gi")}, Limits: corev1.ResourceList{"memory": resource.MustParse("8Gi")}}
	if w%2 == 0 {
		res.Limits[v1alpha1.ResourceNVIDIAGPU] = resource.MustParse("1")
	}
	mounts := []corev1.VolumeMount{{Name: "model", MountPath: "/models"}}
	volumes := []corev1.Volume{{Name: "model", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if serving(w) {
		name := fmt.Sprintf("serve-%d", w)
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, v1alpha1.LabelClass: "inference"}},
			Spec: corev1.PodSpec{
				PriorityClassName: "inference-high",
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}},
				InitContainers: []corev1.Container{{Name: "pull-model", Image: "registry.example.com/tools/model-puller:1.2", Args: []string{"--from", fmt.Sprintf("s3://models/%s/v3", name), "--to", "/models"}, VolumeMounts: mounts}},
				Containers: []corev1.Container{{Name: "server", Image: "registry.example.com/serving/triton:24.08", Args: []string{"--model-repository", "/models"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000, Protocol: "TCP"}}, Resources: res, VolumeMounts: mounts}},
				Volumes: volumes,
			},
		}
	}
	volumes = append(volumes, corev1.Volume{Name: "checkpoints", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("train-%d-checkpoints", w)}}})
	if w%40 == 2 {
		volumes = volumes[:1] // training on spot without a checkpoint volume
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": fmt.Sprintf("train-%d", w), v1alpha1.LabelClass: "training"}},
		Spec: corev1.PodSpec{
			PriorityClassName: "training-low",
			RestartPolicy:     corev1.RestartPolicyNever,
			NodeSelector:      map[string]string{v1alpha1.LabelPool: "spot-gpu"},
			Tolerations:       []corev1.Toleration{{Key: "gpu", Operator: "Exists", Effect: "NoSchedule"}, {Key: v1alpha1.LabelCapacity, Operator: "Exists", Effect: "NoSchedule"}},
			Containers: []corev1.Container{{Name: "train", Image: "registry.example.com/train/pytorch:24.08", Command: []string{"torchrun", "train.py", "--checkpoint-dir", "/checkpoints"},
				Resources: res, VolumeMounts: mounts}},
			Volumes: volumes,
		},
	}
}

func (g *generator) workloads() []any {
	var out []any
	n := int32(g.s.PodsPerWorkload)
	for w := range g.nWorkloads {
		tpl := g.template(w)
		name := tpl.Labels["app"]
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
		meta := metav1.ObjectMeta{Name: name, Namespace: g.team(w), UID: uid("workload", w), CreationTimestamp: created, Labels: map[string]string{"app": name, v1alpha1.LabelClass: tpl.Labels[v1alpha1.LabelClass]}}
		if !serving(w) {
			out = append(out, &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta,
				Spec: batchv1.JobSpec{Parallelism: &n, Completions: &n, Selector: sel, Template: tpl}})
			continue
		}
		out = append(out, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Replicas: &n, Selector: sel, Template: tpl}})
		rs := tpl.DeepCopy()
		rs.Labels["pod-template-hash"] = "5d8f7c9b6"
		truth := true
		out = append(out, &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{Name: name + "-5d8f7c9b6", Namespace: meta.Namespace, UID: uid("rs", w), Labels: rs.Labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: meta.UID, Controller: &truth, BlockOwnerDeletion: &truth}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &n, Selector: sel, Template: *rs}})
	}
	return out
}

// pods are pods [from, to): each workload's replicas, running.
func (g *generator) pods(from, to int) []any {
	var out []any
	truth := true
	grace := int64(30)
	for i := from; i < to; i++ {
		w := i / g.s.PodsPerWorkload
		tpl := g.template(w)
		name := tpl.Labels["app"]
		owner := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: uid("workload", w), Controller: &truth, BlockOwnerDeletion: &truth}
		priority := int32(1000)
		if serving(w) {
			tpl.Labels["pod-template-hash"] = "5d8f7c9b6"
			name += "-5d8f7c9b6"
			owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: uid("rs", w), Controller: &truth, BlockOwnerDeletion: &truth}
			priority = 100000
		}
		if g.s.Minimal {
			out = append(out, &corev1.Pod{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05x", name, i), Namespace: g.team(w), Labels: tpl.Labels},
				Spec:       corev1.PodSpec{Containers: tpl.Spec.Containers},
			})
			continue
		}
		spec := tpl.Spec
		node := fmt.Sprintf("cpu-%05d", i%max(1, g.cpuNodes))
		spec.NodeName = node
		spec.Priority = &priority
		spec.DNSPolicy, spec.SchedulerName, spec.ServiceAccountName, spec.DeprecatedServiceAccount = corev1.DNSClusterFirst, "default-scheduler", "default", "default"
		spec.TerminationGracePeriodSeconds = &grace
		spec.Tolerations = append(spec.Tolerations,
			corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &[]int64{300}[0]},
			corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &[]int64{300}[0]})
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &[]int64{3607}[0]}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		}}}})
		for c := range spec.Containers {
			spec.Containers[c].TerminationMessagePath, spec.Containers[c].TerminationMessagePolicy, spec.Containers[c].ImagePullPolicy = "/dev/termination-log", "File", "IfNotPresent"
			spec.Containers[c].VolumeMounts = append(spec.Containers[c].VolumeMounts, corev1.VolumeMount{Name: "kube-api-access", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
		}
		var conds []corev1.PodCondition
		for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"} {
			conds = append(conds, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: created})
		}
		var statuses []corev1.ContainerStatus
		for _, c := range spec.Containers {
			statuses = append(statuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:" + fmt.Sprintf("%064x", w), ContainerID: fmt.Sprintf("containerd://%064x", i),
				Ready: true, Started: &truth, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}})
		}
		ip := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)
		owners := []metav1.OwnerReference{owner}
		if g.s.Bare {
			owners = nil
		}
		out = append(out, &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05x", name, i), GenerateName: name + "-", Namespace: g.team(w), UID: uid("Pod", i), ResourceVersion: fmt.Sprint(2000 + i),
				CreationTimestamp: created, Labels: tpl.Labels, OwnerReferences: owners},
			Spec: spec,
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conds, HostIP: "10.240.0.1", HostIPs: []corev1.HostIP{{IP: "10.240.0.1"}}, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				StartTime: &created, ContainerStatuses: statuses, QOSClass: corev1.PodQOSBurstable},
		})
	}
	return out
}
