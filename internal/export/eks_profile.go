package export

import (
	"fmt"
	"io"
	"strings"

	"berth.io/berth/api/v1alpha1"
)

// On EKS, Cluster Autoscaler is a Deployment the user installs, so the
// autoscaler profile is its command line, written in the ClusterConfig's
// header, and the priority expander's ConfigMap, written there too as
// lines marked "#| " that sed turns back into YAML.

// eksConfigMapMark starts each line of the ConfigMap in the header.
const eksConfigMapMark = "#| "

// eksUUID is the node group ID EKS puts at the end of the Auto Scaling
// group it makes for a managed node group: eks-NODEGROUP-UUID.
const eksUUID = "-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

// eksNodeGroupRE matches the Auto Scaling group of a managed node group,
// which cluster-autoscaler on AWS names node groups by. The UUID keeps
// node group gpu from matching node group gpu-large.
func eksNodeGroupRE(p *v1alpha1.Pool) string {
	return exactName("eks-", p.Name, eksUUID)
}

// eksAutoscalerArgs are Cluster Autoscaler's arguments: AWS auto-discovery
// by the tags the node groups carry, then the profile.
func eksAutoscalerArgs(bp *v1alpha1.Blueprint) []string {
	args := []string{
		"--cloud-provider=aws",
		"--node-group-auto-discovery=asg:tag=" + caEnabledTag + "," + caClusterTag + bp.Metadata.Name,
	}
	for _, f := range caFlags(profile(bp)) {
		args = append(args, "--"+f.name+"="+f.value)
	}
	return args
}

// writeEKSAutoscaler writes the header section on Cluster Autoscaler.
func writeEKSAutoscaler(w io.Writer, bp *v1alpha1.Blueprint) error {
	pools := autoscaled(bp)
	if len(pools) == 0 {
		writeComment(w, "", "", "No pool autoscales, so Cluster Autoscaler and the node autoscaler's profile (spec.autoscaler) are left out.")
		return nil
	}
	writeComment(w, "", "",
		"Cluster Autoscaler: eksctl does not install it. Run it (the Deployment's command, or the Helm chart's extraArgs) with these arguments, which carry the blueprint's node autoscaler profile (spec.autoscaler) as they are:")
	for _, a := range eksAutoscalerArgs(bp) {
		fmt.Fprintf(w, "#   %s\n", a)
	}
	if !usesPriority(profile(bp)) {
		return nil
	}
	cm, err := priorityConfigMap(bp, eksNodeGroupRE)
	if err != nil {
		return err
	}
	writeComment(w, "", "",
		fmt.Sprintf("The priority expander reads the pools' priorities (%s) from this ConfigMap, in Cluster Autoscaler's namespace (kube-system here). It matches the Auto Scaling group EKS makes for each managed node group, eks-NODEGROUP-UUID; an older node group whose Auto Scaling group is named eks-UUID alone needs its expression rewritten with that name. Pools it does not list are never chosen while a listed one could be, so every autoscaled pool is listed. Apply it before starting Cluster Autoscaler:", poolPriorities(pools)),
		"")
	fmt.Fprintf(w, "#   sed -n 's/^%s//p' cluster.yaml | kubectl apply -f -\n", strings.TrimSpace(eksConfigMapMark)+" ")
	for _, l := range strings.Split(strings.TrimSuffix(cm, "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight(eksConfigMapMark+l, " "))
	}
	return nil
}
