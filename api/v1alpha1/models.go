package v1alpha1

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
)

// Models wires model artifacts into workloads: a Deployment or
// StatefulSet annotated berth.io/model: NAME@ALIAS (or NAME:VERSION)
// gets an init container that pulls the model from Store into an
// emptyDir, mounted read-only in its containers at MountPath.
type Models struct {
	// Store is the artifact store, s3://BUCKET/PREFIX or file://DIR, as
	// `berth model --store` takes it. Required.
	Store string `json:"store"`
	// Endpoint is the S3 endpoint pods reach the store at (S3_ENDPOINT),
	// for stores other than AWS S3. Empty means AWS.
	Endpoint string `json:"endpoint,omitempty"`
	// Region is the bucket's region (AWS_REGION). Empty lets the client
	// discover it.
	Region string `json:"region,omitempty"`
	// PullerImage runs `berth model pull`. Empty means DefaultPullerImage.
	PullerImage string `json:"pullerImage,omitempty"`
	// MountPath is where containers find the model; the version pulled is
	// MountPath/current. Empty means /models.
	MountPath string `json:"mountPath,omitempty"`
	// Secret names a Secret, in each workload's namespace, whose keys
	// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...) become the puller's
	// environment. Empty means none: the pod's own identity reaches the
	// store.
	Secret string `json:"secret,omitempty"`
	// SizeLimit caps the model's emptyDir when the workload does not
	// carry berth.io/model-size (which `berth model promote` pins from
	// the version's size). Nil means 20Gi.
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`
	// SharedVolume, when set, asks for the shared-volume variant for
	// every workload the wiring matches: instead of an init container
	// pulling into each pod's emptyDir, the replicas share a directory
	// on a ReadWriteMany claim, kept current by the puller running as
	// a sidecar in --watch mode, which swaps new versions in without
	// restarting the pods. Nil means the init container and emptyDir.
	SharedVolume *ModelSharedVolume `json:"sharedVolume,omitempty"`
}

// ModelSharedVolume is the shared-volume variant of the model wiring.
type ModelSharedVolume struct {
	// ClaimName names a ReadWriteMany PersistentVolumeClaim that must
	// exist in each model-following workload's namespace. The claim is
	// the user's, not berth's: ReadWriteMany needs a storage class only
	// the cluster knows (EFS, Filestore, Azure Files, NFS), and a claim
	// holding models must outlive a `berth apply` that prunes. Each
	// workload gets its own directory on it. Empty means berth-models.
	ClaimName string `json:"claimName,omitempty"`
}

// Model wiring defaults (the annotations it reads and writes are in
// wellknown.go).
const (
	DefaultPullerImage = "ghcr.io/berth-io/berth:latest"
	DefaultModelMount  = "/models"
	// DefaultModelClaim is the shared-volume variant's claim.
	DefaultModelClaim = "berth-models"
)

// DefaultModelSizeLimit is the emptyDir limit when nothing says more.
var DefaultModelSizeLimit = resource.MustParse("20Gi")

// setModelDefaults fills the model wiring's defaults.
func setModelDefaults(m *Models) {
	if m == nil {
		return
	}
	if m.PullerImage == "" {
		m.PullerImage = DefaultPullerImage
	}
	if m.MountPath == "" {
		m.MountPath = DefaultModelMount
	}
	setQuantity(&m.SizeLimit, DefaultModelSizeLimit)
	if m.SharedVolume != nil && m.SharedVolume.ClaimName == "" {
		m.SharedVolume.ClaimName = DefaultModelClaim
	}
}

// validateModels checks spec.models.
func validateModels(p *field.Path, m *Models) problem.List {
	if m == nil {
		return nil
	}
	var errs problem.List
	switch {
	case m.Store == "":
		errs = append(errs, invalid(p.Child("store"), "the store pods pull models from", "set it to s3://BUCKET/PREFIX, or file://DIR for a local rehearsal"))
	case !strings.HasPrefix(m.Store, "s3://") && !strings.HasPrefix(m.Store, "file://"):
		errs = append(errs, invalid(p.Child("store"), "is not an s3:// or file:// URL", "write s3://BUCKET/PREFIX (R2, MinIO and GCS are s3:// with endpoint set), or file://DIR"))
	case strings.HasPrefix(m.Store, "s3://") && strings.TrimPrefix(m.Store, "s3://") == "":
		errs = append(errs, invalid(p.Child("store"), "names no bucket", "write s3://BUCKET/PREFIX"))
	}
	if !path.IsAbs(m.MountPath) || path.Clean(m.MountPath) != m.MountPath || m.MountPath == "/" {
		errs = append(errs, invalid(p.Child("mountPath"), "must be a clean absolute path other than /", "use a directory such as /models"))
	}
	if m.Secret != "" {
		errs = append(errs, dnsLabel(p.Child("secret"), m.Secret)...)
	}
	if m.SharedVolume != nil {
		errs = append(errs, dnsLabel(p.Child("sharedVolume", "claimName"), m.SharedVolume.ClaimName)...)
	}
	if m.SizeLimit != nil && m.SizeLimit.Sign() <= 0 {
		errs = append(errs, invalid(p.Child("sizeLimit"), "must be positive", fmt.Sprintf("give the largest model's size with room to spare, such as %s", DefaultModelSizeLimit.String())))
	}
	return errs
}
