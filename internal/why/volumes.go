package why

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	storageutil "k8s.io/kubernetes/pkg/apis/storage/util"

	"berth.io/berth/internal/problem"
)

// volumes is the Volumes layer: each claim the pod mounts, as the
// scheduler's VolumeBinding plugin sees it. It returns the first claim
// that keeps the pod from being scheduled, nil when none does: a claim
// that does not exist or is being deleted, an unbound claim whose class
// is unknown or binds at once but has no volume yet, a claim bound to a
// volume that does not exist, or a volume bound in a zone where no node
// exists. A claim of a WaitForFirstConsumer class waits for the pod, not
// the other way round, unless its class makes no volumes and none is
// left to bind. berth's simulation leaves VolumeBinding out, so
// what it says of the pools cannot be the verdict while a claim blocks.
// The rest of the scheduler's volume reasons come from the simulation,
// which runs VolumeZone and NodeVolumeLimits when the storage could be
// read: a node outside the volume's zone, or at its attach limit for
// the claim's driver, is a pool verdict with its fix (verdict.go).
func (e *explainer) volumes() *Cause {
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for i := range e.s.Claims {
		c := &e.s.Claims[i]
		claims[c.Namespace+"/"+c.Name] = c
	}
	classes := map[string]*storagev1.StorageClass{}
	var defaultClass *storagev1.StorageClass
	for i := range e.s.StorageClasses {
		sc := &e.s.StorageClasses[i]
		classes[sc.Name] = sc
		if storageutil.IsDefaultAnnotation(sc.ObjectMeta) {
			defaultClass = sc
		}
	}
	volumes := map[string]*corev1.PersistentVolume{}
	for i := range e.s.Volumes {
		volumes[e.s.Volumes[i].Name] = &e.s.Volumes[i]
	}
	for _, v := range e.pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		claim, ok := claims[e.pod.Namespace+"/"+name]
		if !ok {
			return volumeCause(CauseClaimMissing, fmt.Sprintf("the pod mounts claim %s, which does not exist in namespace %s: the scheduler waits for it", name, e.pod.Namespace),
				fmt.Sprintf("create PersistentVolumeClaim %s in %s (`berth new training` writes a checkpoint claim with its Job), or mount another", name, e.pod.Namespace))
		}
		if claim.DeletionTimestamp != nil {
			return volumeCause(CauseClaimDeleted, fmt.Sprintf("the pod mounts claim %s, which is being deleted: the scheduler places no pod that mounts it", name),
				fmt.Sprintf("create claim %s again once it is gone (its volume goes with it unless the class retains volumes), or mount another; a pod still using it keeps it until that pod ends", name))
		}
		if !e.s.StorageKnown {
			continue
		}
		if claim.Spec.VolumeName != "" {
			pv := volumes[claim.Spec.VolumeName]
			if pv == nil {
				return volumeCause(CauseVolumeGone, fmt.Sprintf("claim %s is bound to volume %s, which does not exist: the scheduler finds no node for a claim bound to a missing volume", name, claim.Spec.VolumeName),
					fmt.Sprintf("delete claim %s and create it again so that its class provisions a new volume (the data of the missing one is gone unless it was backed up)", name))
			}
			if c := e.volumeZone(claim, pv); c != nil {
				return c
			}
			continue
		}
		class := defaultClass
		if n := claim.Spec.StorageClassName; n != nil {
			class = classes[*n]
			if class == nil && *n != "" {
				return volumeCause(CauseClaimClass, fmt.Sprintf("claim %s names storage class %s, which does not exist: nothing will make its volume", name, *n),
					fmt.Sprintf("name one of the cluster's classes (%s) in the claim (a claim's class cannot change: delete and create it again), or add %s to the blueprint's spec.storage.classes and apply", strings.Join(classNames(e.s.StorageClasses), ", "), *n))
			}
		}
		if class == nil {
			return volumeCause(CauseClaimClass, fmt.Sprintf("claim %s is unbound, names no storage class, and the cluster has no default class", name),
				"name a storage class in the claim, or give the cluster a default class (spec.storage.classes[].default in the blueprint)")
		}
		if class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
			if class.Provisioner == noProvisioner && !availableVolume(e.s.Volumes, class.Name) {
				return volumeCause(CauseClaimNoVolume, fmt.Sprintf("claim %s is unbound and its storage class %s makes no volumes (provisioner %s): no available volume of the class is left to bind, so no node will do", name, class.Name, noProvisioner),
					fmt.Sprintf("create a PersistentVolume of class %s for the claim (its size and access modes, on a node the pod can use), or name a class with a provisioner (%s)", class.Name, strings.Join(classNames(e.s.StorageClasses), ", ")))
			}
			continue // bound once the scheduler picks the pod's node
		}
		msg := fmt.Sprintf("claim %s (storage class %s, which binds at once) has no volume yet: its provisioner %s has not made one", name, class.Name, class.Provisioner)
		if d, err := time.ParseDuration(class.Parameters["provisioningTime"]); err == nil && d > 0 {
			if left := d - e.s.Now.Sub(claim.CreationTimestamp.Time); left > 0 {
				msg += fmt.Sprintf("; the class takes %s to make one, about %s left", d, left.Round(time.Second))
			}
		}
		return volumeCause(CauseClaimUnbound, msg,
			fmt.Sprintf("wait for the provisioner; `kubectl describe pvc %s -n %s` shows its events, and a class whose provisioner nobody runs never binds", name, e.pod.Namespace))
	}
	return nil
}

// volumeZone is the cause when the claim's volume can be reached from no
// node that exists: its node affinity (a zonal disk's zone) matches none.
func (e *explainer) volumeZone(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) *Cause {
	if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	sel, err := nodeaffinity.NewNodeSelector(pv.Spec.NodeAffinity.Required)
	if err != nil {
		return nil
	}
	for i := range e.s.Nodes {
		if sel.Match(&e.s.Nodes[i]) {
			return nil
		}
	}
	zone := pv.Labels[corev1.LabelTopologyZone]
	where := "the nodes its affinity names"
	if zone != "" {
		where = "zone " + zone
	}
	return volumeCause(CauseVolumeZone, fmt.Sprintf("claim %s is bound to volume %s, which lives in %s, and no node is there: the pod can only run where its volume is", claim.Name, pv.Name, where),
		fmt.Sprintf("give a pool of the pod's class nodes in %s (its zones, or autoscale: the autoscaler grows a pool there for the pod), or restore the volume's data to a new claim elsewhere", where))
}

// noProvisioner is the provisioner of a class whose volumes are made by
// hand (local volumes): the scheduler binds its claims only to volumes
// that exist.
const noProvisioner = "kubernetes.io/no-provisioner"

// availableVolume reports whether a volume of class waits for a claim.
func availableVolume(volumes []corev1.PersistentVolume, class string) bool {
	for _, pv := range volumes {
		if pv.Spec.StorageClassName == class && pv.Spec.ClaimRef == nil && pv.Status.Phase == corev1.VolumeAvailable {
			return true
		}
	}
	return false
}

func volumeCause(code, msg, fix string) *Cause {
	return &Cause{Layer: LayerVolumes, Code: code, Problem: problem.Problem{Message: msg, Fix: fix}}
}

func classNames(classes []storagev1.StorageClass) []string {
	var out []string
	for _, c := range classes {
		out = append(out, c.Name)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
