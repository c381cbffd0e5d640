package dash

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"berth.io/berth/internal/status"
)

// Under Kueue the Overview shows each ClusterQueue beside the quotas: its
// workloads waiting and admitted, and per GPU flavor used of nominal with
// what is borrowed; with no queues, no section.
func TestOverviewQueues(t *testing.T) {
	gpu := corev1.ResourceName("nvidia.com/gpu")
	cq := kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: "team-b"},
		Spec: kueue.ClusterQueueSpec{CohortName: "retail", ResourceGroups: []kueue.ResourceGroup{{
			CoveredResources: []corev1.ResourceName{gpu},
			Flavors: []kueue.FlavorQuotas{
				{Name: "spot-gpu", Resources: []kueue.ResourceQuota{{Name: gpu, NominalQuota: resource.MustParse("1")}}},
				{Name: "gpu", Resources: []kueue.ResourceQuota{{Name: gpu, NominalQuota: resource.MustParse("1")}}},
			}}}},
		Status: kueue.ClusterQueueStatus{PendingWorkloads: 2, AdmittedWorkloads: 2, FlavorsUsage: []kueue.FlavorUsage{
			{Name: "spot-gpu", Resources: []kueue.ResourceUsage{{Name: gpu, Total: resource.MustParse("2"), Borrowed: resource.MustParse("1")}}}}},
	}
	o := overview(&View{Status: &status.Cluster{Queues: []kueue.ClusterQueue{cq}}})
	if len(o.Queues) != 1 {
		t.Fatalf("queues %+v; want team-b's", o.Queues)
	}
	q := o.Queues[0]
	if q.Name != "team-b" || q.Cohort != "retail" || q.Waiting != 2 || q.Admitted != 2 || len(q.GPUs) != 2 {
		t.Fatalf("row %+v", q)
	}
	if s := q.GPUs[0]; s.Flavor != "spot-gpu" || s.Used != "2" || s.Total != "1" || s.Borrowed != "1" || s.Fraction != 2 {
		t.Errorf("spot-gpu %+v; want 2 of 1 used, 1 borrowed", s)
	}
	if g := q.GPUs[1]; g.Flavor != "gpu" || g.Used != "0" || g.Total != "1" || g.Borrowed != "0" {
		t.Errorf("gpu %+v; want 0 of 1, none borrowed", g)
	}

	ps, err := newPageSet()
	if err != nil {
		t.Fatal(err)
	}
	render := func(o Overview) string {
		var b bytes.Buffer
		if err := ps.pages["overview"].Execute(&b, pageData{Overview: &o}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	html := render(o)
	for _, want := range []string{`<tr data-queue="team-b">`, "Teams' queues (Kueue)", `<span class="tag">1 borrowed</span>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the Overview lacks %q:\n%s", want, html)
		}
	}
	// Borrowing is how a cohort works: the flavor team-b borrows on is
	// not marked full, as a quota over its limit would be.
	row := html[strings.Index(html, `<tr data-queue="team-b">`):]
	row = row[:strings.Index(row, "</tr>")]
	if strings.Contains(row, "tag full") {
		t.Errorf("team-b's queue, borrowing, is marked full:\n%s", row)
	}
	if html := render(overview(&View{Status: &status.Cluster{}})); strings.Contains(html, "queues-h") {
		t.Error("an Overview without queues has a queues section")
	}
}
