// Package scaffold writes the manifests of a new workload as the blueprint
// wants it: an inference server, a training Job or a batch worker, labelled
// with a class the team may use. What the class gives at admission
// (tolerations, node affinity, podFailurePolicy, a per-workload budget) is
// left to the class policies; what only the workload can say (requests, GPU
// limits, the model it follows, where it checkpoints) is written here.
package scaffold

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/words"
)

// Kind is what a scaffold runs.
type Kind string

const (
	Inference Kind = "inference"
	Training  Kind = "training"
	Batch     Kind = "batch"
)

// Kinds lists the kinds, in the order the CLI shows them.
var Kinds = []Kind{Inference, Training, Batch}

// Role is the class role a workload of kind k runs under: Serving for
// inference, Training for training, General for batch.
func (k Kind) Role() v1alpha1.ClassRole {
	switch k {
	case Inference:
		return v1alpha1.RoleServing
	case Training:
		return v1alpha1.RoleTraining
	}
	return v1alpha1.RoleGeneral
}

// Options say what to scaffold.
type Options struct {
	Kind Kind
	// Name names the workload and its companions. Required.
	Name string
	// Team owns it; the objects go in its first namespace. Required.
	Team string
	// Class overrides the choice of class. Empty means the first class of
	// the kind's role that the team may use, in blueprint order.
	Class string
	// Model is NAME@ALIAS or NAME:VERSION, for the berth.io/model
	// annotation (inference only). Empty means no model.
	Model string
	// GPUs per pod. Zero means none, or 1 when every pool of the class
	// has GPUs (a pod without one would have no pool to run on) unless
	// GPUsGiven.
	GPUs int
	// GPUsGiven says GPUs was asked for (--gpus, a trace's gpus column),
	// 0 included: the class picked must have pools for such pods, pools
	// with GPUs for pods that ask for some, pools without for pods that
	// ask for none.
	GPUsGiven bool
	// Queue is the URL of the queue a batch worker reads (QUEUE_URL), and
	// scales on when its class has no queue of its own: amqp://…/QUEUE,
	// kafka://BROKERS/TOPIC, https://sqs.REGION.amazonaws.com/ACCOUNT/NAME
	// or sqs://REGION/NAME. Empty means the class's queue, or none.
	Queue string
	// Scaler scales a batch worker on its queue. Empty means ScalerHPA.
	Scaler Scaler
	// Image is the container image. Empty means a placeholder to replace.
	Image string
	// StorageClass is the class of a training Job's checkpoint claim.
	// Empty means the blueprint's default class.
	StorageClass string
	// CheckpointClaim has Job keep a training Job's checkpoint claim and
	// its mount, for a rehearsal of checkpointed training.
	CheckpointClaim bool
}

// Object is one manifest with the comment written above it.
type Object struct {
	Comment string
	Object  runtime.Object
}

// Scaffold is the objects of one workload.
type Scaffold struct {
	Namespace string
	Class     *v1alpha1.Class
	// Why says why Class was chosen, for people: "--class" when it was
	// asked for.
	Why     string
	Objects []Object
}

// ckptGrace is the least terminationGracePeriodSeconds for training:
// the spot notice of Azure and Google Cloud.
var ckptGrace = v1alpha1.DefaultSpotNotice

// New builds the scaffold o asks for from bp.
func New(bp *v1alpha1.Blueprint, o Options) (*Scaffold, error) {
	if !slices.Contains(Kinds, o.Kind) {
		return nil, problem.Errorf("use one of inference, training, batch", "unknown kind %q", o.Kind)
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return nil, problem.Errorf("use lower-case letters, digits and '-', at most 63 characters", "name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if o.GPUs < 0 {
		return nil, problem.Errorf("pass 0 or more", "--gpus %d: a count of GPUs cannot be negative", o.GPUs)
	}
	if o.Model != "" {
		if o.Kind != Inference {
			return nil, problem.New("drop --model, or scaffold inference", "--model is for inference: the berth.io/model wiring adds the puller to Deployments and StatefulSets")
		}
		if !validModel(o.Model) {
			return nil, problem.Errorf("e.g. --model reco@production or --model reco:4", "--model %q: want NAME@ALIAS or NAME:VERSION", o.Model)
		}
	}
	if o.Queue != "" && o.Kind != Batch {
		return nil, problem.New("drop --queue, or scaffold batch", "--queue is for batch workers")
	}
	if o.StorageClass != "" && o.Kind != Training {
		return nil, problem.New("drop --storage-class, or scaffold training", "--storage-class is for training's checkpoint claim")
	}
	if o.StorageClass != "" && !hasStorageClass(bp, o.StorageClass) {
		return nil, problem.Errorf(fmt.Sprintf("use one of %s, or add the class to spec.storage.classes", strings.Join(storageClassNames(bp), ", ")), "--storage-class %s: the blueprint has no such storage class", o.StorageClass)
	}
	switch o.Scaler {
	case "":
		o.Scaler = ScalerHPA
	case ScalerHPA, ScalerKEDA:
	default:
		return nil, problem.Errorf("pass --scaler hpa (an HPA on the queue's depth, the default) or --scaler keda (a KEDA ScaledObject)", "--scaler %q: want hpa or keda", o.Scaler)
	}
	if o.Scaler == ScalerKEDA && o.Kind != Batch {
		return nil, problem.New("drop --scaler, or scaffold batch with --queue URL", "--scaler keda is for batch workers, which KEDA scales on their queue")
	}
	team := findTeam(bp, o.Team)
	if team == nil {
		return nil, problem.Errorf("pass --team with one of them, or add the team to spec.teams", "no team %q in the blueprint; its teams are %s", o.Team, teamNames(bp))
	}
	class, why, err := pickClass(bp, team, o)
	if err != nil {
		return nil, err
	}
	if err := hostsPods(bp, class, o); err != nil {
		return nil, err
	}
	// A pod without GPUs gets only the class's pools without GPUs on
	// admission: on a GPU-only class, none.
	gpuDefault := o.GPUs == 0 && !o.GPUsGiven && len(ClassPools(bp, class, true)) > 0 && len(ClassPools(bp, class, false)) == 0
	if gpuDefault {
		o.GPUs = 1
	}
	var queue *workQueue
	if o.Kind == Batch {
		if queue, err = resolveQueue(class, o); err != nil {
			return nil, err
		}
	}
	if o.Scaler == ScalerKEDA && queue == nil {
		return nil, problem.Errorf("pass --queue URL, or a --class with a queue, or drop --scaler keda", "--scaler keda scales a worker on its queue, and class %s has none and no --queue was given", class.Name)
	}
	ns := team.Name
	if len(team.Namespaces) > 0 {
		ns = team.Namespaces[0]
	}
	if o.Image == "" {
		o.Image = "registry.example.com/" + team.Name + "/" + o.Name + ":0.1.0"
	}
	s := &Scaffold{Namespace: ns, Class: class, Why: why}
	b := builder{bp: bp, o: o, ns: ns, class: class, queue: queue, gpuDefault: gpuDefault}
	switch o.Kind {
	case Inference:
		s.Objects = b.inference()
	case Training:
		s.Objects = b.training()
	case Batch:
		s.Objects = b.batch()
	}
	return s, nil
}

func validModel(m string) bool {
	name, alias, ok := strings.Cut(m, "@")
	if !ok {
		name, alias, ok = strings.Cut(m, ":")
	}
	return ok && name != "" && alias != "" && !strings.ContainsAny(alias, "@:")
}

func findTeam(bp *v1alpha1.Blueprint, name string) *v1alpha1.Team {
	for i := range bp.Spec.Teams {
		if bp.Spec.Teams[i].Name == name {
			return &bp.Spec.Teams[i]
		}
	}
	return nil
}

func teamNames(bp *v1alpha1.Blueprint) string {
	var names []string
	for _, t := range bp.Spec.Teams {
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// MayUse reports whether team t may use the class named class: a team
// that lists no classes may use every one.
func MayUse(t *v1alpha1.Team, class string) bool {
	return len(t.Classes) == 0 || slices.Contains(t.Classes, class)
}

// DefaultClass is the class New picks for a workload of kind k of team,
// whose pods ask for gpus GPUs each, when no class is given. Its error
// says why there is none, with the fix.
func DefaultClass(bp *v1alpha1.Blueprint, team *v1alpha1.Team, k Kind, gpus int) (*v1alpha1.Class, error) {
	c, _, err := pickClass(bp, team, Options{Kind: k, GPUs: gpus, GPUsGiven: true})
	return c, err
}

// hostsPods says, as an error with its fix, when class c has no pool for
// the pods o asks for: pools with GPUs for pods with GPUs, pools without
// for pods given none.
func hostsPods(bp *v1alpha1.Blueprint, c *v1alpha1.Class, o Options) error {
	var p *problem.Problem
	switch {
	case o.GPUs > 0 && len(ClassPools(bp, c, true)) == 0:
		p = problem.Errorf(fmt.Sprintf("drop --gpus, or add a GPU pool to class %s's pools", c.Name), "class %s has no GPU pool (its pools: %s), so a pod asking for GPUs would never be placed", c.Name, strings.Join(c.Pools, ", "))
	case o.GPUs == 0 && o.GPUsGiven && len(ClassPools(bp, c, false)) == 0:
		p = problem.Errorf(fmt.Sprintf("ask for GPUs (--gpus 1), or add a pool without GPUs to class %s's pools", c.Name), "class %s has only GPU pools (%s), so a pod asking for no GPUs would never be placed", c.Name, strings.Join(c.Pools, ", "))
	default:
		return nil
	}
	p.Field = "gpus"
	return p
}

// pickClass chooses the class, and says why: o.Class when given, else
// the first of the kind's role that the team may use; for a batch worker,
// the first of them with a queue of its own (a worker without one starts
// at 0 replicas and nothing scales it), or, given --queue, the first
// without (a class's own queue and --queue cannot both be read).
func pickClass(bp *v1alpha1.Blueprint, team *v1alpha1.Team, o Options) (*v1alpha1.Class, string, error) {
	role := o.Kind.Role()
	var usable []*v1alpha1.Class
	var ofRole, forbidden, unfit []string
	for i := range bp.Spec.Classes {
		c := &bp.Spec.Classes[i]
		if o.Class != "" {
			if c.Name != o.Class {
				continue
			}
			if !MayUse(team, c.Name) {
				return nil, "", problem.Errorf(fmt.Sprintf("pass --class with one of the team's classes, or add %s to the team's classes in the blueprint", c.Name), "team %s may not use class %s (its classes: %s)", team.Name, c.Name, strings.Join(team.Classes, ", "))
			}
			if c.EffectiveRole() != role {
				return nil, "", problem.Errorf(fmt.Sprintf("pass a %s class to --class, or leave --class out", role), "class %s has role %s; %s wants a %s class", c.Name, c.EffectiveRole(), o.Kind, role)
			}
			return c, "--class", nil
		}
		if c.EffectiveRole() != role {
			continue
		}
		ofRole = append(ofRole, c.Name)
		switch {
		case !MayUse(team, c.Name):
			forbidden = append(forbidden, c.Name)
		case hostsPods(bp, c, o) != nil:
			unfit = append(unfit, c.Name)
		default:
			usable = append(usable, c)
		}
	}
	if len(usable) > 0 {
		first := fmt.Sprintf("the first %s class team %s may use", role, team.Name)
		if len(usable) == 1 {
			first = fmt.Sprintf("the only %s class team %s may use", role, team.Name)
		}
		if o.Kind != Batch {
			return usable[0], first, nil
		}
		withQueue := slices.IndexFunc(usable, hasQueue)
		if o.Queue != "" {
			if without := slices.IndexFunc(usable, func(c *v1alpha1.Class) bool { return !hasQueue(c) }); without > 0 {
				return usable[without], fmt.Sprintf("the first %s class team %s may use without a queue of its own, so the worker reads --queue", role, team.Name), nil
			}
			return usable[0], first, nil
		}
		if withQueue < 0 {
			none := "no class of the team's has a queue"
			if len(unfit) > 0 {
				none = "no class of the team's with pools for these pods has a queue"
			}
			return usable[0], first + "; " + none + ", so the worker starts at 0 replicas and nothing scales it (scale it by hand, or pass --queue URL for an HPA on the queue's depth)", nil
		}
		q := usable[withQueue].Scaling.Queue
		why := fmt.Sprintf("the first %s class team %s may use with a queue (%s %s), which scales the worker from zero", role, team.Name, q.Type, queueName(q))
		if withQueue > 0 {
			why += fmt.Sprintf("; %s has none, and a worker of it would start at 0 replicas with nothing to scale it", usable[0].Name)
		}
		return usable[withQueue], why, nil
	}
	if o.Class != "" {
		return nil, "", problem.Errorf("pass --class with one of the blueprint's classes, or leave it out", "no class %q in the blueprint", o.Class)
	}
	if len(ofRole) == 0 {
		return nil, "", problem.Errorf(fmt.Sprintf("add one to spec.classes, e.g. %s", roleExample(o.Kind)), "the blueprint has no %s class (%s: %s), so %s has nowhere to run", role, o.Kind, roleRule(role), o.Kind)
	}
	if len(unfit) > 0 {
		p := problem.Errorf("ask for GPUs (--gpus 1), or give one of them a pool without GPUs in the blueprint", "no %s class team %s may use has a pool without GPUs for pods that ask for none: %s %s only GPU pools", role, team.Name, strings.Join(unfit, ", "), words.Pick(len(unfit), "has", "have"))
		if o.GPUs > 0 {
			p = problem.Errorf("ask for no GPUs, or give one of them a GPU pool in the blueprint", "no %s class team %s may use has a GPU pool for pods with %d GPU(s): %s %s none", role, team.Name, o.GPUs, strings.Join(unfit, ", "), words.Pick(len(unfit), "has", "have"))
		}
		p.Field = "gpus"
		return nil, "", p
	}
	return nil, "", problem.Errorf(fmt.Sprintf("add one of them to team %s's classes in the blueprint (then berth apply)", team.Name), "team %s may not use a %s class: %s %s, and the team's classes are %s", team.Name, role, strings.Join(forbidden, ", "), words.Pick(len(forbidden), "is", "are"), strings.Join(team.Classes, ", "))
}

func hasQueue(c *v1alpha1.Class) bool { return c.Scaling != nil && c.Scaling.Queue != nil }

func roleRule(r v1alpha1.ClassRole) string {
	switch r {
	case v1alpha1.RoleServing:
		return "role Serving, or priority high"
	case v1alpha1.RoleTraining:
		return "role Training, or preemption Never"
	}
	return "role General, or neither priority high nor preemption Never"
}

func roleExample(k Kind) string {
	switch k {
	case Inference:
		return "{name: inference, priority: high, pools: [cpu, gpu], disruption: {minAvailable: 2}, spread: zone}"
	case Training:
		return "{name: training, priority: low, preemption: Never, pools: [spot-gpu, gpu]}"
	}
	return "{name: batch, pools: [cpu]}"
}

// ClassPools are the class's pools with GPUs (gpu true) or without, in
// the class's order: the pools a pod with GPUs, or without, is given.
func ClassPools(bp *v1alpha1.Blueprint, c *v1alpha1.Class, gpu bool) []*v1alpha1.Pool {
	var out []*v1alpha1.Pool
	for _, name := range c.Pools {
		for i := range bp.Spec.Pools {
			p := &bp.Spec.Pools[i]
			if p.Name == name && (p.GPUResource() != "") == gpu {
				out = append(out, p)
			}
		}
	}
	return out
}

// grace is the training pod's terminationGracePeriodSeconds: the longest
// spot notice among the pools it may land on, at least ckptGrace.
func grace(pools []*v1alpha1.Pool) int64 {
	d := ckptGrace
	for _, p := range pools {
		if p.Capacity == v1alpha1.Spot {
			d = max(d, p.SpotNotice())
		}
	}
	return int64(d / time.Second)
}

func hasStorageClass(bp *v1alpha1.Blueprint, name string) bool {
	for _, n := range storageClassNames(bp) {
		if n == name {
			return true
		}
	}
	return false
}

func storageClassNames(bp *v1alpha1.Blueprint) []string {
	var out []string
	if bp.Spec.Storage != nil {
		for _, c := range bp.Spec.Storage.Classes {
			out = append(out, c.Name)
		}
	}
	return out
}
