package status

import corev1 "k8s.io/api/core/v1"

// Cores, Memory, Count and Size write a number as Render does, for the
// other views of the same summary (berth dash), so that each shows what
// `berth status` prints.
func Cores(l corev1.ResourceList) string                        { return cores(l) }
func Memory(l corev1.ResourceList) string                       { return mem(l) }
func Count(l corev1.ResourceList, r corev1.ResourceName) string { return count(l, r) }
func Size(p Pool) string                                        { return size(p) }
