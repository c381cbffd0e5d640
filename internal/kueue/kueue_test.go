package kueue

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"berth.io/berth/api/v1alpha1"
)

var update = flag.Bool("update", false, "copy Kueue's manifests from the module again")

// moduleDir is the module cache's copy of the Kueue module go.mod names.
func moduleDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/kueue: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// The manifests berth installs are the module's: every CRD in
// config/components/crd/bases and the webhooks of
// config/components/webhook/manifests.yaml, byte for byte.
func TestManifestsAreTheModules(t *testing.T) {
	dir := moduleDir(t)
	copies := map[string]string{filepath.Join(dir, "config/components/webhook/manifests.yaml"): "manifests/webhooks.yaml"}
	crds, err := filepath.Glob(filepath.Join(dir, "config/components/crd/bases/*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("the module's CRDs: %v (%d files)", err, len(crds))
	}
	for _, f := range crds {
		copies[f] = "manifests/crd/" + filepath.Base(f)
	}
	for from, to := range copies {
		want, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(to, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(to)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not the module's %s: run go test ./internal/kueue -update", to, from)
		}
	}
	ours, err := filepath.Glob("manifests/crd/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(ours) != len(crds) {
		t.Errorf("%d CRDs here, %d in the module: remove those the module dropped and run -update", len(ours), len(crds))
	}
}

// converted names the CRDs config/components/crd/kustomization.yaml
// gives a conversion webhook.
func TestConvertedAreTheKustomizations(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(moduleDir(t), "config/components/crd/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- path: patches/webhook_in_"); ok {
			want = append(want, strings.TrimSuffix(name, ".yaml"))
		}
	}
	if got := slices.Sorted(slices.Values(converted)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("converted = %v; the kustomization patches %v", got, want)
	}
}

// The webhooks registered are Kueue's own kinds' and the Job
// integration's, each at its path on the server's URL, trusting the CA.
func TestWebhookConfigurations(t *testing.T) {
	url := func(p string) string { return "https://127.0.0.1:1234" + p }
	ca := []byte("CA")
	mutating, validating, err := webhookConfigurations(url, ca)
	if err != nil {
		t.Fatal(err)
	}
	// Kueue's release prefixes the manifests' names with "kueue-".
	raw, err := manifests.ReadFile("manifests/webhooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{v1alpha1.KueueMutatingWebhooks, v1alpha1.KueueValidatingWebhooks} {
		if !bytes.Contains(raw, []byte("\n  name: "+strings.TrimPrefix(name, "kueue-")+"\n")) {
			t.Errorf("the manifests name no configuration %s without its release prefix", name)
		}
	}
	if mutating.Name != v1alpha1.KueueMutatingWebhooks || validating.Name != v1alpha1.KueueValidatingWebhooks {
		t.Errorf("names %s, %s; want Kueue's release names", mutating.Name, validating.Name)
	}
	var names []string
	for _, h := range mutating.Webhooks {
		names = append(names, h.Name)
		if c := h.ClientConfig; c.Service != nil || !strings.HasPrefix(ptr.Deref(c.URL, ""), "https://127.0.0.1:1234/mutate-") || string(c.CABundle) != "CA" {
			t.Errorf("%s: client config %+v", h.Name, c)
		}
	}
	for _, h := range validating.Webhooks {
		names = append(names, h.Name)
		if c := h.ClientConfig; c.Service != nil || !strings.HasPrefix(ptr.Deref(c.URL, ""), "https://127.0.0.1:1234/validate-") || string(c.CABundle) != "CA" {
			t.Errorf("%s: client config %+v", h.Name, c)
		}
	}
	slices.Sort(names)
	want := []string{"mclusterqueue.kb.io", "mjob.kb.io", "mresourceflavor.kb.io", "mworkload.kb.io",
		"vclusterqueue.kb.io", "vcohort.kb.io", "vjob.kb.io", "vresourceflavor.kb.io", "vworkload.kb.io"}
	if !slices.Equal(names, want) {
		t.Errorf("webhooks %v; want %v", names, want)
	}
}

// berth's configuration is one Kueue's own loader takes, and it keeps
// what berth set: no leader election, no certificate management, Jobs
// alone, and Jobs without a queue left alone.
func TestConfigurationLoads(t *testing.T) {
	opts, cfg, err := load(Configuration(false))
	if err != nil {
		t.Fatal(err)
	}
	if opts.LeaderElection {
		t.Error("leader election is on")
	}
	if ptr.Deref(cfg.InternalCertManagement.Enable, true) {
		t.Error("internal certificate management is on")
	}
	if !slices.Equal(cfg.Integrations.Frameworks, []string{"batch/job"}) {
		t.Errorf("integrations %v; want batch/job alone", cfg.Integrations.Frameworks)
	}
	if cfg.ManageJobsWithoutQueueName {
		t.Error("Kueue would manage Jobs without a queue")
	}
	if cfg.FairSharing != nil {
		t.Error("fair sharing is on unasked")
	}
	_, fair, err := load(Configuration(true))
	if err != nil {
		t.Fatal(err)
	}
	if fair.FairSharing == nil || len(fair.FairSharing.PreemptionStrategies) == 0 {
		t.Errorf("fair sharing asked for: %+v; want it on, with its preemption strategies", fair.FairSharing)
	}
}

// The cluster removes by name the APIServices berth-kueue registers:
// the two lists must be one.
func TestVisibilityAPIServicesNamed(t *testing.T) {
	var registered []string
	for _, gv := range visibilityVersions {
		registered = append(registered, gv.Version+"."+gv.Group)
	}
	if !slices.Equal(registered, v1alpha1.KueueVisibilityAPIServices) {
		t.Errorf("berth-kueue registers %v; the cluster removes %v", registered, v1alpha1.KueueVisibilityAPIServices)
	}
}
