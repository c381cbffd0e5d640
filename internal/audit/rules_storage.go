package audit

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"berth.io/berth/api/v1alpha1"
)

// checkClaims holds each claim to the blueprint's storage classes: the
// class it names must exist, and offer the access modes it asks.
func (v *view) checkClaims() {
	classes := v.opts.StorageClasses
	if classes == nil {
		return
	}
	var names []string
	byName := map[string]*v1alpha1.StorageClass{}
	var def *v1alpha1.StorageClass
	for i := range classes {
		c := &classes[i]
		names = append(names, c.Name)
		byName[c.Name] = c
		if c.Default {
			def = c
		}
	}
	for i := range v.inv.Claims {
		pvc := &v.inv.Claims[i]
		if v.system[pvc.Namespace] {
			continue
		}
		obj := Object{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name}
		class, field := def, "spec.storageClassName"
		if n := pvc.Spec.StorageClassName; n != nil {
			if *n == "" {
				continue // bound by hand to a volume of no class
			}
			c, ok := byName[*n]
			if !ok {
				v.add(v1alpha1.RuleClaimClass, obj, field,
					fmt.Sprintf("storage class %q is not one of the blueprint's (%s): nothing makes its volume, so the claim and its pods stay Pending", *n, strings.Join(names, ", ")),
					fmt.Sprintf("name one of %s, or add %s to spec.storage.classes", strings.Join(names, ", "), *n))
				continue
			}
			class = c
		}
		if class == nil || !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) || class.Offers(corev1.ReadWriteMany) {
			continue
		}
		var shared []string
		for i := range classes {
			if classes[i].Offers(corev1.ReadWriteMany) {
				shared = append(shared, classes[i].Name)
			}
		}
		fix := "add ReadWriteMany to a class's accessModes (a file share), and name it here"
		if len(shared) > 0 {
			fix = "name " + strings.Join(shared, " or ") + " in spec.storageClassName"
		}
		v.add(v1alpha1.RuleClaimAccessMode, obj, "spec.accessModes",
			fmt.Sprintf("the claim asks ReadWriteMany of storage class %s, which offers %s only", class.Name, modesOf(class)), fix)
	}
}

func modesOf(c *v1alpha1.StorageClass) string {
	var out []string
	for _, m := range c.AccessModes {
		out = append(out, string(m))
	}
	return strings.Join(out, ", ")
}
