package why

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/listing"
)

// WorkloadKinds are the kinds `berth why KIND/NAME` accepts, by the
// names kubectl accepts for them.
var WorkloadKinds = map[string]string{
	"deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
	"statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
	"job": "Job", "jobs": "Job",
	"replicaset": "ReplicaSet", "replicasets": "ReplicaSet", "rs": "ReplicaSet",
}

// ReadWorkload reads what explaining a workload needs: the cluster, the
// workload and the objects that create its pods, and the namespace's
// events (its pods' and its creators'). A workload that does not exist is
// an error apierrors.IsNotFound recognises.
func ReadWorkload(ctx context.Context, c kubernetes.Interface, l listing.Lister, kind, namespace, name string, bp *v1alpha1.Blueprint) (*Snapshot, *Workload, error) {
	r := newReader(ctx, c, l, bp)
	r.cluster(namespace)
	r.events(namespace, fields.Everything())
	r.hpas(namespace)
	var w *Workload
	r.g.Go(func() error {
		var err error
		if kind == "Deployment" {
			w, err = readDeployment(r.ctx, c, namespace, name)
		} else {
			w, err = readCreator(r.ctx, c, kind, namespace, name)
		}
		if err == nil && w == nil {
			err = apierrors.NewNotFound(schemaResource(kind), name)
		}
		return err
	})
	s, err := r.wait()
	if err != nil {
		return nil, nil, err
	}
	s.Workloads = append(s.Workloads, *w)
	return s, w, nil
}

func readDeployment(ctx context.Context, c kubernetes.Interface, namespace, name string) (*Workload, error) {
	d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: %w", name, err)
	}
	rss, err := c.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the ReplicaSets of deployment %s: %w", name, err)
	}
	w := &Workload{Kind: "Deployment", Namespace: namespace, Name: name, UID: d.UID, Desired: replicas(d.Spec.Replicas),
		Class: classLabel(d.Labels, d.Spec.Template.Labels)}
	for _, rs := range rss.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == d.UID {
			w.Creators = append(w.Creators, Ref{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID})
		}
	}
	return w, nil
}

// readCreator reads an object that creates pods itself, or nil when it
// is gone or of a kind berth does not explain.
func readCreator(ctx context.Context, c kubernetes.Interface, kind, namespace, name string) (*Workload, error) {
	w := &Workload{Kind: kind, Namespace: namespace, Name: name, Desired: -1}
	var meta *metav1.ObjectMeta
	var err error
	switch kind {
	case "ReplicaSet":
		var rs *appsv1.ReplicaSet
		if rs, err = c.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta, w.Desired = &rs.ObjectMeta, replicas(rs.Spec.Replicas)
			w.Class = classLabel(rs.Labels, rs.Spec.Template.Labels)
		}
	case "StatefulSet":
		var ss *appsv1.StatefulSet
		if ss, err = c.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta, w.Desired = &ss.ObjectMeta, replicas(ss.Spec.Replicas)
			w.Class = classLabel(ss.Labels, ss.Spec.Template.Labels)
		}
	case "Job":
		var j *batchv1.Job
		if j, err = c.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta, w.Desired, w.Done = &j.ObjectMeta, jobWants(j), jobDone(j)
			w.Class = classLabel(j.Labels, j.Spec.Template.Labels)
			if q := j.Labels[v1alpha1.LabelKueueQueueName]; q != "" {
				if w.Queued, err = readQueued(ctx, c, namespace, j.UID, q, j.Spec.Suspend != nil && *j.Spec.Suspend); err != nil {
					return nil, err
				}
			}
		}
	default:
		return nil, nil
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	w.UID = meta.UID
	w.Creators = []Ref{{Kind: kind, Name: name, UID: meta.UID}}
	// A ReplicaSet is reported as its Deployment's.
	if ref := metav1.GetControllerOf(meta); kind == "ReplicaSet" && ref != nil && ref.Kind == "Deployment" {
		w.Kind, w.Name, w.UID = "Deployment", ref.Name, ref.UID
	}
	return w, nil
}

// classLabel is the first berth.io/class label of the workload's own
// labels and its pod template's.
func classLabel(own, template map[string]string) string {
	if c := own[v1alpha1.LabelClass]; c != "" {
		return c
	}
	return template[v1alpha1.LabelClass]
}

// classNamed is the blueprint's class name, or nil.
func classNamed(s *Snapshot, name string) *v1alpha1.Class {
	if s.Blueprint == nil || name == "" {
		return nil
	}
	for i := range s.Blueprint.Spec.Classes {
		if s.Blueprint.Spec.Classes[i].Name == name {
			return &s.Blueprint.Spec.Classes[i]
		}
	}
	return nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// jobWants is how many pods a Job runs at once now: its parallelism,
// capped by the completions still to go.
func jobWants(j *batchv1.Job) int32 {
	want := replicas(j.Spec.Parallelism)
	if j.Spec.Completions != nil {
		want = min(want, max(*j.Spec.Completions-j.Status.Succeeded, 0))
	}
	return want
}

func jobDone(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func schemaResource(kind string) schema.GroupResource {
	group := "apps"
	if kind == "Job" {
		group = "batch"
	}
	return schema.GroupResource{Group: group, Resource: strings.ToLower(kind) + "s"}
}
