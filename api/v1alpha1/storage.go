package v1alpha1

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth.io/berth/internal/problem"
)

// Storage is the cluster's storage: the classes a claim may name. On the
// local cluster each class is a StorageClass with a provisioner of
// berth's that binds claims as the cloud's CSI driver would; `berth
// export` writes each as the cloud's own.
type Storage struct {
	// Classes are the storage classes. Empty means one zonal
	// ReadWriteOnce class, the default (DefaultStorageClass), and, when
	// models.sharedVolume is set, a ReadWriteMany one
	// (DefaultSharedStorageClass).
	Classes []StorageClass `json:"classes,omitempty"`
}

// StorageClass is one class of volumes.
type StorageClass struct {
	// Name is the StorageClass's name. Required.
	Name string `json:"name"`
	// Default makes it the cluster's default class: a claim that names
	// no class gets it. At most one class is the default.
	Default bool `json:"default,omitempty"`
	// AccessModes are the modes its volumes offer: ReadWriteOnce,
	// ReadWriteMany. Empty means ReadWriteOnce.
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// Zonal says a volume lives in one zone, as a cloud's block disk
	// does: the class binds WaitForFirstConsumer, and the volume is made
	// in the zone of the node the claim's first pod is scheduled to,
	// which pins every later pod to that zone. Nil means true for a
	// ReadWriteOnce class and false for a ReadWriteMany one (a file
	// share serves every zone).
	Zonal *bool `json:"zonal,omitempty"`
	// ProvisioningTime is how long a volume takes to be made on the
	// local cluster, as the cloud takes. Nil means 0s.
	ProvisioningTime *metav1.Duration `json:"provisioningTime,omitempty"`
	// MinSize and MaxSize bound a claim's request: a smaller request
	// gets MinSize (as EBS rounds up to its minimum), a larger one is
	// refused. Nil means 1Gi and no maximum.
	MinSize *resource.Quantity `json:"minSize,omitempty"`
	MaxSize *resource.Quantity `json:"maxSize,omitempty"`
	// PricePerGiBMonth is what a GiB of the class costs a month, in US
	// dollars ("0.08"). Nil means no price.
	PricePerGiBMonth *Dollars `json:"pricePerGiBMonth,omitempty"`
	// MaxVolumesPerNode is how many of the class's volumes one node can
	// attach (EBS: 25 to 127 by instance type). Zero means no limit.
	MaxVolumesPerNode int32 `json:"maxVolumesPerNode,omitempty"`
	// ReclaimPolicy is Delete (the volume goes with its claim) or
	// Retain. Empty means Delete.
	ReclaimPolicy corev1.PersistentVolumeReclaimPolicy `json:"reclaimPolicy,omitempty"`
}

// The default storage classes' names.
const (
	DefaultStorageClass       = "standard"
	DefaultSharedStorageClass = "shared"
)

// DefaultMinVolumeSize is a class's least volume when it names none.
var DefaultMinVolumeSize = resource.MustParse("1Gi")

// IsZonal reports whether the class's volumes live in one zone.
func (c *StorageClass) IsZonal() bool {
	if c.Zonal != nil {
		return *c.Zonal
	}
	for _, m := range c.AccessModes {
		if m == corev1.ReadWriteMany {
			return false
		}
	}
	return true
}

// ProvisioningDuration is ProvisioningTime, 0 when unset.
func (c *StorageClass) ProvisioningDuration() time.Duration {
	if c.ProvisioningTime == nil {
		return 0
	}
	return c.ProvisioningTime.Duration
}

// Offers reports whether the class's volumes offer mode.
func (c *StorageClass) Offers(mode corev1.PersistentVolumeAccessMode) bool {
	for _, m := range c.AccessModes {
		if m == mode {
			return true
		}
	}
	return false
}

// DefaultStorageClassName is the blueprint's default storage class, ""
// when none.
func (s *Spec) DefaultStorageClassName() string {
	if s.Storage == nil {
		return ""
	}
	for i := range s.Storage.Classes {
		if s.Storage.Classes[i].Default {
			return s.Storage.Classes[i].Name
		}
	}
	return ""
}

// SharedStorageClassName is the first ReadWriteMany class, "" when none.
func (s *Spec) SharedStorageClassName() string {
	if s.Storage == nil {
		return ""
	}
	for i := range s.Storage.Classes {
		if s.Storage.Classes[i].Offers(corev1.ReadWriteMany) {
			return s.Storage.Classes[i].Name
		}
	}
	return ""
}

// setStorageDefaults gives a blueprint without classes the default ones,
// and each class its defaults.
func setStorageDefaults(s *Spec) {
	if s.Storage == nil {
		s.Storage = &Storage{}
	}
	if len(s.Storage.Classes) == 0 {
		s.Storage.Classes = []StorageClass{{Name: DefaultStorageClass, Default: true}}
		if s.Models != nil && s.Models.SharedVolume != nil {
			s.Storage.Classes = append(s.Storage.Classes, StorageClass{Name: DefaultSharedStorageClass, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}})
		}
	}
	for i := range s.Storage.Classes {
		c := &s.Storage.Classes[i]
		if len(c.AccessModes) == 0 {
			c.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		}
		if c.Zonal == nil {
			z := c.IsZonal()
			c.Zonal = &z
		}
		setQuantity(&c.MinSize, DefaultMinVolumeSize)
		if c.ReclaimPolicy == "" {
			c.ReclaimPolicy = corev1.PersistentVolumeReclaimDelete
		}
	}
}

// validateStorage checks spec.storage.
func validateStorage(p *field.Path, s *Spec) problem.List {
	if s.Storage == nil {
		return nil
	}
	var errs problem.List
	seen := map[string]bool{}
	defaults := 0
	for i := range s.Storage.Classes {
		c := &s.Storage.Classes[i]
		cp := p.Child("classes").Index(i)
		errs = append(errs, dnsLabel(cp.Child("name"), c.Name)...)
		if c.Name != "" && seen[c.Name] {
			errs = append(errs, duplicate(cp.Child("name"), c.Name))
		}
		seen[c.Name] = true
		if c.Default {
			defaults++
			if defaults == 2 {
				errs = append(errs, invalid(cp.Child("default"), "a second default class", "keep default: true on one class only: a claim that names no class gets that one"))
			}
		}
		for j, m := range c.AccessModes {
			if m != corev1.ReadWriteOnce && m != corev1.ReadWriteMany {
				errs = append(errs, invalid(cp.Child("accessModes").Index(j), fmt.Sprintf("%q is not an access mode berth provisions", m), "use ReadWriteOnce (a block disk) or ReadWriteMany (a file share)"))
			}
		}
		if c.ProvisioningTime != nil && c.ProvisioningTime.Duration < 0 {
			errs = append(errs, invalid(cp.Child("provisioningTime"), "must not be negative", "give how long the cloud takes to make a volume, such as 10s"))
		}
		if c.MinSize != nil && c.MinSize.Sign() <= 0 {
			errs = append(errs, invalid(cp.Child("minSize"), "must be positive", "give the least volume the cloud makes, such as 1Gi"))
		}
		if c.MinSize != nil && c.MaxSize != nil && c.MaxSize.Cmp(*c.MinSize) < 0 {
			errs = append(errs, invalid(cp.Child("maxSize"), fmt.Sprintf("%s is below minSize %s", c.MaxSize.String(), c.MinSize.String()), "raise maxSize to at least minSize"))
		}
		if c.MaxVolumesPerNode < 0 {
			errs = append(errs, invalid(cp.Child("maxVolumesPerNode"), "must not be negative", "give how many of the class's volumes a node can attach, or 0 for no limit"))
		}
		if c.ReclaimPolicy != "" && c.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete && c.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
			errs = append(errs, invalid(cp.Child("reclaimPolicy"), fmt.Sprintf("%q is not Delete or Retain", c.ReclaimPolicy), "use Delete (the volume goes with its claim) or Retain"))
		}
		if c.PricePerGiBMonth != nil && *c.PricePerGiBMonth < 0 {
			errs = append(errs, invalid(cp.Child("pricePerGiBMonth"), "must not be negative", "give US dollars per GiB-month, such as \"0.08\""))
		}
	}
	if s.Models != nil && s.Models.SharedVolume != nil && len(s.Storage.Classes) > 0 && s.SharedStorageClassName() == "" {
		errs = append(errs, invalid(p.Child("classes"), "no class offers ReadWriteMany, which models.sharedVolume's claim needs", "add a class with accessModes: [ReadWriteMany]"))
	}
	return errs
}
