package apply

import (
	"fmt"
	"io"
	"strings"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/budgets"
	"berth.io/berth/internal/pools"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/recorded"
)

var symbols = map[Action]string{Create: "+", Update: "~", Replace: "±", Delete: "-", Conflict: "!"}

// Render writes the plan for people: one line per object or pool, the
// fields that change under it, and a summary.
func (p *Plan) Render(w io.Writer) {
	counts := map[Action]int{}
	if len(p.Objects) > 0 {
		fmt.Fprintln(w, "Objects:")
	}
	for i := range p.Objects {
		ch := &p.Objects[i]
		counts[ch.Action]++
		fmt.Fprintf(w, "  %s %s %s\n", symbols[ch.Action], ch.Action, ch.Ref())
		if ch.Note != "" {
			note := problem.Problem{Message: ch.Note}
			if ch.Action == Conflict {
				note.Fix = conflictFix
			}
			fmt.Fprintf(w, "      (%s)\n", indent(note.String(), "       "))
		}
		for _, f := range ch.Fields {
			if ch.Action == Create && strings.HasPrefix(f.Path, "metadata.labels") {
				continue // the ownership labels, on every object
			}
			fmt.Fprintf(w, "      %s\n", renderField(f))
		}
	}
	poolCounts := map[pools.Action]int{}
	switch {
	case !p.PoolsManaged:
		fmt.Fprintln(w, "Pools: not changed here: this is not a berth local cluster, so its nodes belong to the cloud.\n  `berth export --target aks|eks|gke|karpenter` writes the pools for your cloud's own tools.")
	case len(p.Pools) > 0:
		fmt.Fprintln(w, "Pools:")
	}
	for i := range p.Pools {
		ch := &p.Pools[i]
		poolCounts[ch.Action]++
		renderPool(w, ch)
	}
	if len(p.Budgets) > 0 {
		fmt.Fprintln(w, "Disruption budgets (one per workload of a class with a budget):")
	}
	budgetCounts := map[budgets.Action]int{}
	for _, ch := range p.Budgets {
		budgetCounts[ch.Action]++
		fmt.Fprintf(w, "  %s %s %s\n      (%s)\n", symbols[Action(ch.Action)], ch.Action, ch.Ref(), ch.Detail)
	}
	if len(p.Record) > 0 {
		fmt.Fprintf(w, "Autoscaler (kube-system/%s, read by the local cluster's autoscaler at its next scan):\n", recorded.ConfigMapName(p.Blueprint))
		for _, r := range p.Record {
			fmt.Fprintf(w, "  ~ %s\n", r)
		}
	}
	if len(p.Kept) > 0 {
		fmt.Fprintln(w, "Left alone (they left the blueprint; `--prune` deletes them):")
		for _, k := range p.Kept {
			fmt.Fprintf(w, "  %s\n", k)
		}
	}
	if len(p.Unsupported) > 0 {
		fmt.Fprintln(w, "Not applied (the cluster's API lacks them):")
		for _, u := range p.Unsupported {
			fmt.Fprintf(w, "  %s\n", u)
		}
	}
	if len(p.Shared) > 0 {
		fmt.Fprintln(w, "Held by another blueprint on this cluster, left as they are (cluster-wide, shared):")
		for _, k := range p.Shared {
			fmt.Fprintf(w, "  %s\n", k)
		}
	}
	if len(p.Ignored) > 0 {
		fmt.Fprintln(w, "Not berth's, never touched:")
		for _, k := range p.Ignored {
			fmt.Fprintf(w, "  %s\n", k)
		}
	}
	if p.Empty() {
		fmt.Fprintf(w, "No changes: the cluster matches blueprint %s.\n", p.Blueprint)
		return
	}
	fmt.Fprint(w, "\nPlan:")
	if len(p.Objects) > 0 {
		fmt.Fprintf(w, " %d to create, %d to update, %d to replace, %d to delete", counts[Create], counts[Update], counts[Replace], counts[Delete])
		if counts[Conflict] > 0 {
			fmt.Fprintf(w, ", %d in conflict", counts[Conflict])
		}
		if len(p.Pools) > 0 {
			fmt.Fprint(w, ";")
		}
	}
	if len(p.Pools) > 0 {
		var parts []string
		for _, a := range []pools.Action{pools.Create, pools.Resize, pools.Update, pools.Replace, pools.Delete} {
			if n := poolCounts[a]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d to %s", n, a))
			}
		}
		fmt.Fprintf(w, " pools: %s", strings.Join(parts, ", "))
	}
	if len(p.Budgets) > 0 {
		if len(p.Objects) > 0 || len(p.Pools) > 0 {
			fmt.Fprint(w, ";")
		}
		var parts []string
		for _, a := range []budgets.Action{budgets.Create, budgets.Update, budgets.Delete} {
			if n := budgetCounts[a]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d to %s", n, a))
			}
		}
		fmt.Fprintf(w, " budgets: %s", strings.Join(parts, ", "))
	}
	if len(p.Record) > 0 {
		if len(p.Objects) > 0 || len(p.Pools) > 0 || len(p.Budgets) > 0 {
			fmt.Fprint(w, ";")
		}
		fmt.Fprintf(w, " autoscaler: %d setting(s) to change", len(p.Record))
	}
	fmt.Fprintln(w, ".")
}

func renderPool(w io.Writer, ch *pools.Change) {
	sym := map[pools.Action]string{pools.Create: "+", pools.Resize: "~", pools.Update: "~", pools.Replace: "±", pools.Delete: "-"}[ch.Action]
	fmt.Fprintf(w, "  %s %s pool %s: %s\n", sym, ch.Action, ch.Pool, describePool(ch))
	for _, f := range ch.Fields {
		fmt.Fprintf(w, "      %s\n", f)
	}
	if ch.Action == pools.Replace {
		steps := []string{}
		upgrade := ch.ToVersion != ""
		if upgrade {
			// Seed 001's order: the control plane first, then new nodes
			// at its version, the workloads moved, verified, the old
			// nodes deleted.
			steps = append(steps, fmt.Sprintf("control plane first: the local cluster's is already %s, berth's embedded Kubernetes (on a cloud, upgrade it before the pools: `berth export` writes the command)", v1alpha1.ControlPlaneVersion()))
		}
		if adds := ch.Adds(); len(adds) > 0 {
			s := "create " + list(adds) + " and wait until Ready"
			if upgrade {
				s = fmt.Sprintf("create %s at kubelet %s, wait until Ready, and verify that they report %s", list(adds), ch.ToVersion, ch.ToVersion)
			}
			steps = append(steps, s)
		}
		if rm := ch.Removes(); len(rm) > 0 {
			del := "delete " + list(rm)
			if upgrade {
				del += " (kubelet " + ch.FromVersion + ")"
			}
			steps = append(steps,
				"cordon "+list(rm),
				"drain them one at a time through the Eviction API (PodDisruptionBudgets honoured) and wait for the moved pods to run again",
				del)
		}
		for i, s := range steps {
			fmt.Fprintf(w, "      %d. %s\n", i+1, s)
		}
	}
	for _, b := range ch.Blockers {
		fmt.Fprintf(w, "      ! blocked: %s\n", indent(b.String(), "        "))
	}
}

func describePool(ch *pools.Change) string {
	switch ch.Action {
	case pools.Create:
		return fmt.Sprintf("%d node(s): %s", ch.To, list(ch.Adds()))
	case pools.Resize:
		s := fmt.Sprintf("%d → %d nodes (adds %s)", ch.From, ch.To, list(ch.Adds()))
		if len(ch.Removes()) > 0 {
			s = fmt.Sprintf("%d → %d nodes (drains and removes %s)", ch.From, ch.To, list(ch.Removes()))
		}
		if len(ch.Updates()) > 0 {
			s += "; updates " + list(ch.Updates()) + " in place"
		}
		return s
	case pools.Update:
		return fmt.Sprintf("in place on %s", list(ch.Updates()))
	case pools.Replace:
		return fmt.Sprintf("blue/green, %d → %d nodes: no cloud changes these in place", ch.From, ch.To)
	case pools.Delete:
		return fmt.Sprintf("drains and removes %s", list(ch.Removes()))
	}
	return string(ch.Action)
}

// maxValue is the most of a value a plan shows; policies' CEL runs to
// kilobytes (berth export --target manifests shows it whole).
const maxValue = 160

func renderField(f FieldChange) string {
	f.From, f.To = shorten(f.From), shorten(f.To)
	switch {
	case f.From == "" && f.To != "":
		return fmt.Sprintf("%s: %s", f.Path, f.To)
	case f.To == "":
		return fmt.Sprintf("%s: %s → (removed)", f.Path, f.From)
	default:
		return fmt.Sprintf("%s: %s → %s", f.Path, f.From, f.To)
	}
}

// list shortens long node lists: a-0, a-1, … (12 in all).
func list(names []string) string {
	if len(names) == 0 {
		return "no nodes"
	}
	if len(names) <= 6 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, … (%d in all)", strings.Join(names[:4], ", "), len(names))
}

func indent(s, prefix string) string { return strings.ReplaceAll(s, "\n", "\n"+prefix) }

func shorten(s string) string {
	if r := []rune(s); len(r) > maxValue {
		return string(r[:maxValue]) + "…"
	}
	return s
}
