package compile

import (
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"berth.io/berth/api/v1alpha1"
)

// Model wiring: a Deployment or StatefulSet annotated berth.io/model:
// NAME@ALIAS (or NAME:VERSION) gets, from a MutatingAdmissionPolicy,
//   - in its pod template, berth.io/model-ref: the version its pods pull,
//     the followed reference until `berth model promote` pins NAME:VERSION;
//   - an init container running the puller image (`berth model pull
//     $(BERTH_MODEL_REF) --to MOUNT`), the ref read from that annotation
//     through the downward API, and the store's credentials from the
//     blueprint's Secret;
//   - an emptyDir for the model, its sizeLimit from berth.io/model-size
//     (pinned with the version) or the blueprint's default;
//   - the volume mounted read-only at the mount path in every container.
//
// Because the pin lives in the pod template, the pods of one ReplicaSet
// all pull one version, and re-pinning is a template change the
// Deployment controller rolls out under maxUnavailable and the budgets.
// The policy is server-side apply (ApplyConfiguration): lists merge by
// their keys (container name, volume name, mount path), so applying it
// again changes nothing.
//
// The shared-volume variant (spec.models.sharedVolume) swaps the last
// three for:
//   - a volume from the blueprint's ReadWriteMany claim. The claim is
//     referenced by name, not compiled: ReadWriteMany needs a storage
//     class only the cluster knows, and berth prunes what it compiles,
//     which must never take the models with it. Each workload gets its
//     own directory on it (subPath KIND-NAME, such as deployment-reco),
//     so workloads that share a namespace and a claim keep their own
//     current link;
//   - the puller as a native sidecar (an init container with
//     restartPolicy Always) running `berth model pull $(BERTH_MODEL_REF)
//     --to MOUNT --watch` with the same environment and Secret, the
//     directory mounted read-write. A native sidecar rather than an
//     entry in containers: it starts before the server and is not one
//     of the containers the read-only mount is applied to;
//   - the directory mounted read-only at the mount path in every
//     container. The mount is the directory, not its current link: a
//     subPath through a symlink is resolved once, when the container
//     starts, and would never see the swap; readers open MOUNT/current.
// Unpinned, the sidecar follows the alias and swaps new versions in
// with no rollout; pinned, it holds the pinned version and promote's
// re-pin rolls the pods, the first new one swapping the shared
// directory for all.

// Names the wiring adds to a pod template.
const (
	ModelPolicy    = "berth-models"
	ModelContainer = "berth-model"
	ModelVolume    = "berth-model"
)

// modelSubPath is the workload's directory on the shared claim.
const modelSubPath = `(object.kind == "StatefulSet" ? "statefulset-" : "deployment-") + object.metadata.name`

func modelPolicies(bp *v1alpha1.Blueprint) []Object {
	m := bp.Spec.Models
	if m == nil {
		return nil
	}
	p := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "MutatingAdmissionPolicy"),
		ObjectMeta: meta(bp, "", ModelPolicy, nil),
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy: ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
						Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments", "statefulsets"}},
					},
				}},
			},
			// Annotations cannot be selected on like labels; this is
			// the cheapest test that leaves every other object alone.
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "follows-a-model",
				Expression: "has(object.metadata.annotations) && " + strconv.Quote(v1alpha1.AnnotationModel) + " in object.metadata.annotations",
			}},
			Variables: []admissionv1.Variable{
				{Name: "tmpl", Expression: "has(object.spec.template.metadata.annotations) ? object.spec.template.metadata.annotations : {}"},
				{Name: "ref", Expression: "variables.tmpl[?" + strconv.Quote(v1alpha1.AnnotationModelRef) + "].orValue(object.metadata.annotations[" + strconv.Quote(v1alpha1.AnnotationModel) + "])"},
				{Name: "size", Expression: "variables.tmpl[?" + strconv.Quote(v1alpha1.AnnotationModelSize) + "].orValue(" + strconv.Quote(m.SizeLimit.String()) + ")"},
			},
			Mutations: []admissionv1.Mutation{
				{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{Expression: modelInitPatch(m)}},
				{PatchType: admissionv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionv1.ApplyConfiguration{Expression: modelApply(m)}},
			},
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
		},
	}
	return []Object{p, &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   typeMeta(admissionv1.SchemeGroupVersion, "MutatingAdmissionPolicyBinding"),
		ObjectMeta: meta(bp, "", ModelPolicy, nil),
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: ModelPolicy},
	}}
}

// modelInitPatch adds the puller as an init container (in the
// shared-volume variant a native sidecar that watches), unless the
// template has it. It is a JSON patch because server-side apply may not
// set atomic fields (args, envFrom, fieldRef), and it adds one object at
// a time: a list of objects as one patch value panics the 1.36 API
// server's JSON patcher.
func modelInitPatch(m *v1alpha1.Models) string {
	const s = "Object.spec.template.spec"
	q := strconv.Quote
	env := []string{
		s + ".initContainers.env{name: \"BERTH_MODEL_REF\", valueFrom: " + s + ".initContainers.env.valueFrom{fieldRef: " + s + ".initContainers.env.valueFrom.fieldRef{fieldPath: " + q("metadata.annotations['"+v1alpha1.AnnotationModelRef+"']") + "}}}",
		s + ".initContainers.env{name: \"BERTH_MODEL_STORE\", value: " + q(m.Store) + "}",
	}
	if m.Endpoint != "" {
		env = append(env, s+".initContainers.env{name: \"S3_ENDPOINT\", value: "+q(m.Endpoint)+"}")
	}
	if m.Region != "" {
		env = append(env, s+".initContainers.env{name: \"AWS_REGION\", value: "+q(m.Region)+"}")
	}
	args := `["model", "pull", "$(BERTH_MODEL_REF)", "--to", ` + q(m.MountPath) + "]"
	mount := s + ".initContainers.volumeMounts{name: " + q(ModelVolume) + ", mountPath: " + q(m.MountPath) + "}"
	if m.SharedVolume != nil {
		args = `["model", "pull", "$(BERTH_MODEL_REF)", "--to", ` + q(m.MountPath) + `, "--watch"]`
		mount = s + ".initContainers.volumeMounts{name: " + q(ModelVolume) + ", mountPath: " + q(m.MountPath) + ", subPath: " + modelSubPath + "}"
	}
	init := s + ".initContainers{name: " + q(ModelContainer) + ", image: " + q(m.PullerImage) +
		", args: " + args + ", env: [" + strings.Join(env, ", ") + "]"
	if m.Secret != "" {
		init += ", envFrom: [" + s + ".initContainers.envFrom{secretRef: " + s + ".initContainers.envFrom.secretRef{name: " + q(m.Secret) + "}}]"
	}
	if m.SharedVolume != nil {
		init += `, restartPolicy: "Always"`
	}
	init += ", volumeMounts: [" + mount + "]}"
	const inits = "object.spec.template.spec.initContainers"
	return "has(" + inits + ") && " + inits + ".exists(c, c.name == " + q(ModelContainer) + ") ? [] : " +
		"(has(" + inits + ") ? [] : [JSONPatch{op: \"add\", path: \"/spec/template/spec/initContainers\", value: []}]) + " +
		"[JSONPatch{op: \"add\", path: \"/spec/template/spec/initContainers/-\", value: " + init + "}]"
}

// modelApply sets the pin, the volume (an emptyDir, or the shared claim)
// and the read-only mounts: fields
// server-side apply merges by key, so re-applying changes nothing.
func modelApply(m *v1alpha1.Models) string {
	const t = "Object.spec.template"
	const s = t + ".spec"
	q := strconv.Quote
	volume := s + ".volumes{name: " + q(ModelVolume) + ", emptyDir: " + s + ".volumes.emptyDir{sizeLimit: variables.size}}"
	subPath := ""
	if v := m.SharedVolume; v != nil {
		volume = s + ".volumes{name: " + q(ModelVolume) + ", persistentVolumeClaim: " + s + ".volumes.persistentVolumeClaim{claimName: " + q(v.ClaimName) + "}}"
		subPath = ", subPath: " + modelSubPath
	}
	mounts := "object.spec.template.spec.containers.map(c, " + s + ".containers{name: c.name, volumeMounts: [" + s + ".containers.volumeMounts{name: " + q(ModelVolume) + ", mountPath: " + q(m.MountPath) + subPath + ", readOnly: true}]})"
	return "Object{spec: Object.spec{template: " + t + "{" +
		"metadata: " + t + ".metadata{annotations: {" + q(v1alpha1.AnnotationModelRef) + ": variables.ref}}, " +
		"spec: " + s + "{volumes: [" + volume + "], containers: " + mounts + "}}}}"
}
