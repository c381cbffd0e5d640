package scaffold

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// Job is a Job of o.Kind, Training or Batch, as `berth new training`
// writes one (the class's label and PriorityClass, requests equal to
// limits, GPUs as a limit, restartPolicy Never, backoffLimit 4, a grace
// period of its pools' longest spot notice), in class o.Class or the
// class `berth new` picks for the kind, for a rehearsal to run. A
// training Job keeps its checkpoint claim (returned) and the claim's
// mount when o.CheckpointClaim is set; otherwise both are left out, as
// for a batch Job, which runs in a class of the General role. (A
// rehearsal keeps its pods' progress itself: the claim is there for
// where it lets the pods run, its volume's zone.)
func Job(bp *v1alpha1.Blueprint, o Options) (*batchv1.Job, *corev1.PersistentVolumeClaim, *v1alpha1.Class, error) {
	if o.Kind != Training && o.Kind != Batch {
		return nil, nil, nil, problem.Errorf("run training or batch work as a Job; inference as a Deployment (New)", "a %s workload is not a Job", o.Kind)
	}
	team := findTeam(bp, o.Team)
	if team == nil {
		return nil, nil, nil, problem.Errorf("use one of the blueprint's teams, or add the team to spec.teams", "no team %q in the blueprint; its teams are %s", o.Team, teamNames(bp))
	}
	class, _, err := pickClass(bp, team, Options{Kind: o.Kind, Class: o.Class, GPUs: o.GPUs, GPUsGiven: o.GPUsGiven})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := hostsPods(bp, class, o); err != nil {
		return nil, nil, nil, err
	}
	if o.GPUs == 0 && !o.GPUsGiven && len(ClassPools(bp, class, true)) > 0 && len(ClassPools(bp, class, false)) == 0 {
		o.GPUs = 1
	}
	ns := team.Name
	if len(team.Namespaces) > 0 {
		ns = team.Namespaces[0]
	}
	if o.Image == "" {
		o.Image = "registry.example.com/" + team.Name + "/" + o.Name + ":0.1.0"
	}
	b := builder{bp: bp, o: o, ns: ns, class: class}
	var (
		job   *batchv1.Job
		claim *corev1.PersistentVolumeClaim
	)
	for _, obj := range b.training() {
		switch o := obj.Object.(type) {
		case *batchv1.Job:
			job = o
		case *corev1.PersistentVolumeClaim:
			claim = o
		}
	}
	job.Labels[v1alpha1.LabelAppComponent] = string(o.Kind)
	job.Spec.Template.Labels[v1alpha1.LabelAppComponent] = string(o.Kind)
	spec := &job.Spec.Template.Spec
	c := &spec.Containers[0]
	if o.Kind == Batch || !o.CheckpointClaim {
		spec.Volumes = nil
		c.VolumeMounts = nil
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "CHECKPOINT_DIR" })
		claim = nil
	}
	if o.Kind == Batch {
		c.Resources = b.resources(Batch)
	}
	return job, claim, class, nil
}
