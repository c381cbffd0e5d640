package audit

import (
	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/compile"
)

// BlueprintObjects are the objects berth apply makes of bp
// (internal/compile): its team namespaces with their classes' budgets,
// quotas, LimitRanges and PriorityClasses, as an inventory for
// Options.Present. Files that will join the blueprint's cluster need not
// hold them to be audited as they will run there.
func BlueprintObjects(bp *v1alpha1.Blueprint) *Inventory {
	inv := &Inventory{}
	for _, o := range compile.Objects(bp) {
		inv.add(o)
	}
	return inv
}
