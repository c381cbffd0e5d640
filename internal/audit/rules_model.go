package audit

import (
	"fmt"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

// checkModelPins: a Deployment or StatefulSet that follows a model alias
// (berth.io/model: NAME@ALIAS) has its pods pull a pinned NAME:VERSION
// (berth.io/model-ref in its pod template). Unpinned, each pod resolves
// the alias when it starts, so one ReplicaSet can serve two versions at
// once and a rollback changes nothing that the Deployment controller
// sees.
func (v *view) checkModelPins() {
	check := func(obj Object, follows, pinned string) {
		if !strings.Contains(follows, "@") || v.system[obj.Namespace] {
			return
		}
		name, _, _ := strings.Cut(follows, "@")
		if before, _, ok := strings.Cut(pinned, ":"); ok && before == name && !strings.Contains(pinned, "@") {
			return
		}
		v.add(v1alpha1.RuleModelUnpinned, obj, "spec.template.metadata.annotations["+v1alpha1.AnnotationModelRef+"]",
			fmt.Sprintf("follows %s without pinning a version in its pod template, so each pod pulls whatever the alias points to when it starts", follows),
			fmt.Sprintf("run `berth model promote %s VERSION --alias %s` (it pins every workload that follows the alias), or set %s: %s:VERSION in the pod template", name, strings.TrimPrefix(follows, name+"@"), v1alpha1.AnnotationModelRef, name))
	}
	for i := range v.inv.Deployments {
		d := &v.inv.Deployments[i]
		check(Object{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}, d.Annotations[v1alpha1.AnnotationModel], d.Spec.Template.Annotations[v1alpha1.AnnotationModelRef])
	}
	for i := range v.inv.StatefulSets {
		s := &v.inv.StatefulSets[i]
		check(Object{Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name}, s.Annotations[v1alpha1.AnnotationModel], s.Spec.Template.Annotations[v1alpha1.AnnotationModelRef])
	}
}
