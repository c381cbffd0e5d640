// Package crds installs the CRDs of the add-ons a local cluster runs
// beside its control plane (Karpenter's, Kueue's), as their releases
// ship them.
package crds

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"berth.io/berth/api/v1alpha1"
)

// Install creates each CRD, or updates the one the cluster has (keep, if
// set, carries fields of the stored CRD into the update), with berth's
// field manager, then waits up to a minute for the API server to serve
// each. owner names the add-on in errors ("Karpenter's").
func Install(ctx context.Context, cfg *rest.Config, owner string, list []*apiextensionsv1.CustomResourceDefinition, keep func(stored, updated *apiextensionsv1.CustomResourceDefinition)) error {
	ext, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := ext.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range list {
		_, err := api.Create(ctx, crd, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			var old *apiextensionsv1.CustomResourceDefinition
			if old, err = api.Get(ctx, crd.Name, metav1.GetOptions{}); err == nil {
				crd.ResourceVersion = old.ResourceVersion
				if keep != nil {
					keep(old, crd)
				}
				_, err = api.Update(ctx, crd, metav1.UpdateOptions{FieldManager: v1alpha1.FieldManager})
			}
		}
		if err != nil {
			return fmt.Errorf("installing %s CRD %s: %w", owner, crd.Name, err)
		}
	}
	for _, crd := range list {
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return fmt.Errorf("waiting for %s CRD %s to be established: %w", owner, crd.Name, err)
		}
	}
	return nil
}

// Discovered waits up to a minute until the API server's discovery lists
// every served version of each CRD: a CRD is Established a moment before
// discovery has it, and a client that maps kinds through discovery
// (controller-runtime's) fails to start a watch on one it cannot map.
func Discovered(ctx context.Context, cfg *rest.Config, owner string, list []*apiextensionsv1.CustomResourceDefinition) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range list {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			var last error
			if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				got, err := dc.ServerResourcesForGroupVersion(gv)
				if last = err; err != nil {
					return false, nil
				}
				for _, r := range got.APIResources {
					if r.Name == crd.Spec.Names.Plural {
						return true, nil
					}
				}
				return false, nil
			}); err != nil {
				return fmt.Errorf("waiting for discovery to list %s %s in %s (last: %v): %w", owner, crd.Spec.Names.Plural, gv, last, err)
			}
		}
	}
	return nil
}
