package export

import (
	"fmt"
	"io"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storageutil "k8s.io/kubernetes/pkg/apis/storage/util"
	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
)

// cloudStorage is one cloud's CSI drivers for the blueprint's classes: a
// block disk for a ReadWriteOnce class, a file share for a
// ReadWriteMany one, each with the parameters its driver needs.
type cloudStorage struct {
	// block and file are the drivers, with the parameters of a class.
	block, file string
	blockParams map[string]string
	fileParams  map[string]string
	// fileNote says what a file share needs beyond its class.
	fileNote string
	// addon is what installs the drivers on the cluster.
	addon string
}

var storageDrivers = map[Target]cloudStorage{
	EKS: {
		block: "ebs.csi.aws.com", blockParams: map[string]string{"type": "gp3"},
		file: "efs.csi.aws.com", fileParams: map[string]string{"provisioningMode": "efs-ap", "fileSystemId": "FILE_SYSTEM_ID", "directoryPerms": "700"},
		fileNote: "an EFS file system made beforehand: set fileSystemId to its ID",
		addon:    "the EBS CSI driver (the aws-ebs-csi-driver add-on above; aws-efs-csi-driver too for a ReadWriteMany class), which needs IAM permissions: give the add-on a role, e.g. with iam.withOIDC: true and wellKnownPolicies: {ebsCSIController: true}",
	},
	AKS: {
		block: "disk.csi.azure.com", blockParams: map[string]string{"skuName": "StandardSSD_LRS"},
		file: "file.csi.azure.com", fileParams: map[string]string{"skuName": "Standard_LRS"},
		addon: "AKS's Azure Disk and Azure Files CSI drivers, on by default",
	},
	GKE: {
		block: "pd.csi.storage.gke.io", blockParams: map[string]string{"type": "pd-balanced"},
		file: "filestore.csi.storage.gke.io", fileParams: map[string]string{"tier": "standard", "network": "default"},
		fileNote: "the Filestore CSI driver enabled (`gcloud container clusters update CLUSTER --update-addons=GcpFilestoreCsiDriver=ENABLED`); a Filestore instance holds at least 1 TiB",
		addon:    "GKE's Compute Engine persistent disk CSI driver, on by default",
	},
}

// storageClasses writes the blueprint's classes as target's StorageClasses
// for its CSI drivers, and says what each cannot carry over. bp must be
// defaulted. The manifests are one YAML stream to `kubectl apply -f -`.
func storageClasses(bp *v1alpha1.Blueprint, target Target) (manifests string, notes []string, err error) {
	d, ok := storageDrivers[target]
	if !ok || bp.Spec.Storage == nil || len(bp.Spec.Storage.Classes) == 0 {
		return "", nil, nil
	}
	notes = append(notes, "The blueprint's storage classes (spec.storage.classes) for "+d.addon+".")
	var docs []string
	for i := range bp.Spec.Storage.Classes {
		c := &bp.Spec.Storage.Classes[i]
		path := fmt.Sprintf("spec.storage.classes[%d]", i)
		sc := storagev1.StorageClass{
			TypeMeta:             metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
			ObjectMeta:           metav1.ObjectMeta{Name: c.Name, Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelBlueprint: bp.Metadata.Name}},
			ReclaimPolicy:        &c.ReclaimPolicy,
			AllowVolumeExpansion: ptr.To(true),
		}
		if c.Default {
			sc.Annotations = map[string]string{storageutil.IsDefaultStorageClassAnnotation: "true"}
		}
		binding := storagev1.VolumeBindingImmediate
		if c.Offers(corev1.ReadWriteMany) {
			sc.Provisioner, sc.Parameters = d.file, maps.Clone(d.fileParams)
			if d.fileNote != "" {
				notes = append(notes, fmt.Sprintf("Class %s (%s) is a file share: it needs %s.", c.Name, path, d.fileNote))
			}
			if c.IsZonal() {
				notes = append(notes, fmt.Sprintf("Class %s (%s) is zonal, and %s's file shares serve every zone: it binds WaitForFirstConsumer, but its volumes are not pinned to a zone.", c.Name, path, d.file))
				binding = storagev1.VolumeBindingWaitForFirstConsumer
			}
		} else {
			sc.Provisioner, sc.Parameters = d.block, maps.Clone(d.blockParams)
			// A block disk lives in one zone whatever the class says:
			// binding at first use puts it where its pod runs.
			binding = storagev1.VolumeBindingWaitForFirstConsumer
			if !c.IsZonal() {
				notes = append(notes, fmt.Sprintf("Class %s (%s) is not zonal, but %s's disks live in one zone: it binds WaitForFirstConsumer, so each volume is made in its first pod's zone and holds later pods there.", c.Name, path, d.block))
			}
		}
		sc.VolumeBindingMode = &binding
		var lost []string
		if c.ProvisioningDuration() > 0 {
			lost = append(lost, "provisioningTime (the cloud takes what it takes)")
		}
		if c.MinSize != nil && c.MinSize.Cmp(v1alpha1.DefaultMinVolumeSize) != 0 {
			lost = append(lost, "minSize (the driver rounds a claim up to its own least size)")
		}
		if c.MaxSize != nil {
			lost = append(lost, "maxSize (refuse larger claims with a ResourceQuota's requests.storage, or a LimitRange on PersistentVolumeClaims)")
		}
		if c.MaxVolumesPerNode > 0 {
			lost = append(lost, "maxVolumesPerNode (each instance type's attach limit is the cloud's; the driver publishes it on the node)")
		}
		if c.PricePerGiBMonth != nil {
			lost = append(lost, "pricePerGiBMonth (berth's rehearsals read it)")
		}
		if len(lost) > 0 {
			notes = append(notes, fmt.Sprintf("Class %s (%s): a StorageClass does not carry %s.", c.Name, path, strings.Join(lost, "; ")))
		}
		out, err := manifest(&sc)
		if err != nil {
			return "", nil, err
		}
		docs = append(docs, string(out))
	}
	return strings.Join(docs, "---\n"), notes, nil
}

// writeStorageClasses ends target's output with the StorageClasses as a
// comment to apply once the cluster is up: an eksctl ClusterConfig holds
// no Kubernetes objects, and the scripts run before kubectl can reach
// the cluster.
func writeStorageClasses(w io.Writer, bp *v1alpha1.Blueprint, target Target) error {
	manifests, notes, err := storageClasses(bp, target)
	if err != nil || manifests == "" {
		return err
	}
	fmt.Fprintln(w)
	writeComment(w, "", append(notes, "", "Once the cluster is up, apply them (as `#| ` lines, with any other object this file holds so): sed -n 's/^#| //p' FILE | kubectl apply -f -", "")...)
	fmt.Fprintln(w, "#| ---")
	for _, l := range strings.Split(strings.TrimSuffix(manifests, "\n"), "\n") {
		fmt.Fprintf(w, "#| %s\n", l)
	}
	return nil
}
