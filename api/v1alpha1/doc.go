// Package v1alpha1 holds berth's Blueprint API (berth.io/v1alpha1): the one file
// that describes a cluster's node pools, teams and workload classes.
//
// Every command reads a Blueprint the same way: decode strictly, apply
// SetDefaults, then Validate. Nothing else needs to be written by hand.
package v1alpha1

// GroupVersion is the apiVersion every blueprint declares.
const GroupVersion = "berth.io/v1alpha1"

// Kind is the kind every blueprint declares.
const Kind = "Blueprint"
