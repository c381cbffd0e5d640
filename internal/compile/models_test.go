package compile

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/api/v1alpha1"
)

func modelPolicy(t *testing.T, m *v1alpha1.Models) (patch, apply string) {
	t.Helper()
	bp := &v1alpha1.Blueprint{}
	bp.Metadata.Name = "models"
	bp.Spec.Models = m
	v1alpha1.SetDefaults(bp)
	objs := modelPolicies(bp)
	if len(objs) != 2 {
		t.Fatalf("%d objects, want the policy and its binding", len(objs))
	}
	p := objs[0].(*admissionv1.MutatingAdmissionPolicy)
	mut := p.Spec.Mutations
	if len(mut) != 2 || mut[0].JSONPatch == nil || mut[1].ApplyConfiguration == nil {
		t.Fatalf("mutations %+v, want a JSON patch then an apply configuration", mut)
	}
	return mut[0].JSONPatch.Expression, mut[1].ApplyConfiguration.Expression
}

func TestModelPolicyVariants(t *testing.T) {
	patch, apply := modelPolicy(t, &v1alpha1.Models{Store: "s3://models/prod", Secret: "model-store"})
	for _, want := range []string{`"--to", "/models"]`, `secretRef:`} {
		if !strings.Contains(patch, want) {
			t.Errorf("init patch lacks %s:\n%s", want, patch)
		}
	}
	for _, absent := range []string{"--watch", "restartPolicy", "subPath"} {
		if strings.Contains(patch, absent) || strings.Contains(apply, absent) {
			t.Errorf("the emptyDir variant has %s", absent)
		}
	}
	if !strings.Contains(apply, "emptyDir{sizeLimit: variables.size}") || strings.Contains(apply, "persistentVolumeClaim") {
		t.Errorf("the default variant's volume is not the sized emptyDir:\n%s", apply)
	}

	patch, apply = modelPolicy(t, &v1alpha1.Models{Store: "s3://models/prod", Secret: "model-store", SharedVolume: &v1alpha1.ModelSharedVolume{}})
	for _, want := range []string{
		`"--to", "/models", "--watch"]`, `restartPolicy: "Always"`, `secretRef:`,
		`name: "berth-model", mountPath: "/models", subPath: ` + modelSubPath + "}",
	} {
		if !strings.Contains(patch, want) {
			t.Errorf("sidecar patch lacks %s:\n%s", want, patch)
		}
	}
	// One object a patch: a list of objects as one value panics the 1.36
	// API server's JSON patcher.
	if n := strings.Count(patch, "JSONPatch{"); n != 2 || !strings.Contains(patch, `path: "/spec/template/spec/initContainers/-"`) {
		t.Errorf("sidecar patch is not one appended object:\n%s", patch)
	}
	for _, want := range []string{
		`persistentVolumeClaim{claimName: "berth-models"}`,
		`mountPath: "/models", subPath: ` + modelSubPath + `, readOnly: true}`,
	} {
		if !strings.Contains(apply, want) {
			t.Errorf("shared apply lacks %s:\n%s", want, apply)
		}
	}
	if strings.Contains(apply, "emptyDir") {
		t.Errorf("the shared variant still has an emptyDir:\n%s", apply)
	}
}

func TestModelSharedVolumeValidation(t *testing.T) {
	bp := &v1alpha1.Blueprint{}
	bp.Spec.Models = &v1alpha1.Models{Store: "file:///m", SharedVolume: &v1alpha1.ModelSharedVolume{ClaimName: "Not_A_Name"}}
	v1alpha1.SetDefaults(bp)
	errs, _ := v1alpha1.Validate(bp)
	var found bool
	for _, e := range errs {
		if e.Field == field.NewPath("spec", "models", "sharedVolume", "claimName").String() {
			found = true
		}
	}
	if !found {
		t.Errorf("a bad claim name was not refused: %v", errs)
	}
}
