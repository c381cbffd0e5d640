//go:build long

package dash_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/blueprint"
	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/objtest"
	"berth.io/berth/internal/rehearse/report"
	"berth.io/berth/test/harness"
	"k8s.io/utils/ptr"
)

// chromium is Debian's headless-capable browser; hack/test.sh installs
// it when missing.
const chromium = "/usr/bin/chromium"

// browser is the path of Chromium, or the test ends: skipped on a
// developer's machine without it, failed under CI=true, where a browser
// test must never pass by not running.
func browser(t *testing.T) string {
	t.Helper()
	path := chromium
	if _, err := os.Stat(path); err != nil {
		if p, lerr := exec.LookPath("chromium"); lerr == nil {
			return p
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("Chromium is missing (%v): the browser tests need it; hack/test.sh installs it with apt-get install -y chromium", err)
		}
		t.Skipf("Chromium is missing (%v); apt-get install -y chromium runs this test", err)
	}
	return path
}

// screenshotDir is where the browser tests leave their screenshots:
// $BERTH_SCREENSHOTS, else the test's temporary directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("BERTH_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// The dashboard in a real browser, on a retail cluster of its own that
// `berth up --dash` starts with the autoscaler's timings compressed:
// the overview shows the retail pools as `berth status` counts them; a
// 1-GPU training Job created through the API appears on Waiting with its
// verdict, a GPU pool's scale-up on Activity and the new node on the
// Overview, each in a page opened before the Job and never reloaded; a
// Job team-b's GPU quota refuses shows the quota and who holds it.
func TestDashInBrowser(t *testing.T) {
	exe := browser(t)
	shots := screenshotDir(t)
	home := t.TempDir()
	reports := filepath.Join(home, "reports")
	if err := report.WriteDir(filepath.Join(reports, "sample"), sampleReport(), nil); err != nil {
		t.Fatal(err)
	}
	models := "file://" + filepath.Join(home, "models")
	pushSampleModel(t, models, home)
	raw, err := blueprint.Template("retail")
	if err != nil {
		t.Fatal(err)
	}
	bpFile := filepath.Join(home, "retail.yaml")
	if err := os.WriteFile(bpFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out := harness.MustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "dash",
		"--autoscaler", "scanInterval=1s,scaleDownUnneededTime=10m", "--provisioning-time", "8s",
		"--dash", "--dash-listen", "127.0.0.1:0", "--dash-reports", reports, "--dash-store", models)
	t.Cleanup(func() { harness.Berth(t, home, "down", "--name", "dash", "--purge") })
	m := harness.DashURL.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("berth up --dash printed no dashboard address:\n%s", out)
	}
	base := m[1]
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-dash"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1440, 1000))...)
	defer cancel()
	root, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	defer cancel()
	if err := chromedp.Do(root); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	// One tab per page, each loaded once, before anything changes.
	open := func(path string) (context.Context, context.CancelFunc) {
		ctx, cancel := chromedp.NewContext(root)
		t.Cleanup(cancel)
		// The tab lives as long as the context of its first run: one
		// without a deadline.
		if err := chromedp.Do(ctx); err != nil {
			t.Fatalf("opening a tab: %v", err)
		}
		browse(t, ctx, "open "+path, chromedp.Navigate(base+strings.TrimPrefix(path, "/")))
		waitFor(t, ctx, path+" live", present(`#live.on`))
		js[bool](t, ctx, `window.loadedOnce = true`)
		return ctx, cancel
	}
	tab := func(path string) context.Context {
		ctx, _ := open(path)
		return ctx
	}
	overview, waiting, activity := tab("/"), tab("/waiting"), tab("/activity")

	// The overview's pools are berth status's, row for row.
	st := harness.MustBerth(t, home, "status", "--context", "berth-dash")
	for _, pool := range []string{"system", "cpu", "gpu", "spot-gpu"} {
		want := statusRow(t, st, pool)
		nodes := text(t, overview, fmt.Sprintf(`tr[data-pool=%q] td.nodes .num`, pool))
		if nodes != want.nodes {
			t.Errorf("pool %s: the overview shows %q nodes; berth status %q", pool, nodes, want.nodes)
		}
		gpus := text(t, overview, fmt.Sprintf(`tr[data-pool=%q] td.gpu`, pool))
		if want.gpus == "-" && gpus != "-" || want.gpus != "-" && !strings.Contains(gpus, strings.Replace(want.gpus, "/", " / ", 1)) {
			t.Errorf("pool %s: the overview shows GPUs %q; berth status %q", pool, gpus, want.gpus)
		}
	}
	shot(t, overview, shots, "overview")

	// It runs long enough to be seen holding its GPU: a Job pod without
	// a duration completes as soon as it runs.
	train := objtest.TrainingJob("team-a", "train")
	train.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationDuration: "10m"}
	created := time.Now()
	_, err = c.BatchV1().Jobs("team-a").Create(context.Background(), train, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, waiting, "the training Job's pod on Waiting with its verdict", present(`li.verdict[data-pod^="team-a/train-"] .message`))
	t.Logf("the Job's pod on Waiting %v after the Job was created", time.Since(created).Round(time.Millisecond))
	verdict := text(t, waiting, `li.verdict[data-pod^="team-a/train-"] .message`)
	if !strings.Contains(verdict, "pool") {
		t.Errorf("the training pod's verdict names no pool: %q", verdict)
	}
	waitFor(t, waiting, "the pool growing for it", present(`li.verdict[data-pod^="team-a/train-"] [data-growing]`))
	shot(t, waiting, shots, "waiting")
	waitFor(t, activity, "a GPU pool's scale-up on Activity", present(`li[data-kind="scale-up"][data-pool$="gpu"]`))
	grown := attr(t, activity, `li[data-kind="scale-up"][data-pool$="gpu"]`, "data-pool")
	waitFor(t, overview, "the new node Ready on the Overview",
		fmt.Sprintf(`(document.querySelector('tr[data-pool=%q] td.nodes .num') || {}).textContent === "1 / 1"`, grown))
	shot(t, activity, shots, "activity")
	waitFor(t, waiting, "the training pod off Waiting once it runs", "!"+present(`li.verdict[data-pod^="team-a/train-"]`))
	waitFor(t, overview, "its GPU in use on the Overview",
		fmt.Sprintf(`(document.querySelector('tr[data-pool=%q] td.gpu .num') || {}).textContent === "1 / 1"`, grown))
	shot(t, overview, shots, "overview-grown")
	for name, ctx := range map[string]context.Context{"overview": overview, "waiting": waiting, "activity": activity} {
		if !js[bool](t, ctx, `window.loadedOnce === true`) {
			t.Errorf("the %s page was reloaded: it must update in place", name)
		}
	}

	// team-b's GPU quota is 2: a Job of two 1-GPU pods holds it, and the
	// next Job gets no pod.
	teamB := func(name string, pods int32) {
		j := objtest.TrainingJob("team-a", name)
		j.Namespace = "team-b"
		j.Spec.Parallelism, j.Spec.Completions = ptr.To(pods), ptr.To(pods)
		if _, err := c.BatchV1().Jobs("team-b").Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	teamB("hold", 2)
	harness.Eventually(t, time.Minute, "team-b's two pods of Job hold", func() (bool, error) {
		l, err := c.CoreV1().Pods("team-b").List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=hold"})
		return err == nil && len(l.Items) == 2, err
	})
	teamB("wide", 1)
	sel := `li.verdict[data-workload="job/team-b/wide"]`
	waitFor(t, waiting, "the quota-refused Job on Waiting with the quota and its holders", present(sel+` table.quota`)+" && "+present(sel+` table.holders`))
	quota, holders := text(t, waiting, sel+` table.quota`), text(t, waiting, sel+` table.holders`)
	if !strings.Contains(quota, "requests.nvidia.com/gpu") || !strings.Contains(quota, "2 / 2") {
		t.Errorf("the quota shown is not team-b's GPUs at 2 of 2:\n%s", quota)
	}
	if strings.Count(holders, "hold-") != 2 {
		t.Errorf("the holders shown are not Job hold's two pods:\n%s", holders)
	}
	js[bool](t, waiting, fmt.Sprintf("document.querySelector(%q).scrollIntoView(), true", sel))
	shot(t, waiting, shots, "waiting-quota")

	// Each live tab holds a connection for its event stream, and Chromium
	// opens at most six HTTP/1.1 connections to one host: these tabs are
	// closed once shot.
	for _, page := range []string{"workloads", "models", "rehearsals", "rehearsals/sample"} {
		ctx, closeTab := open("/" + page)
		shot(t, ctx, shots, strings.ReplaceAll(page, "/", "-"))
		closeTab()
	}
	t.Logf("screenshots in %s", shots)
	logPageWeight(t, base)
	dashCommand(t, home)
}

// dashCommand runs berth dash on its own against the cluster: it prints
// its address, serves the overview's JSON, and refuses a foreign Host.
func dashCommand(t *testing.T, home string) {
	t.Helper()
	url := harness.Dash(t, home, "--context", "berth-dash")
	resp, err := http.Get(url + "api/overview")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name": "spot-gpu"`) {
		t.Errorf("berth dash's /api/overview: %s\n%s", resp.Status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Host = "rebound.example" + strings.TrimPrefix(strings.TrimSuffix(url, "/"), "http://127.0.0.1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("berth dash answered Host %s with %s; want 403 Forbidden", req.Host, resp.Status)
	}
}

// browse runs the steps in the tab; the test fails after two minutes.
func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	value(t, ctx, what, chromedp.Steps(steps...))
}

// value is what the action gives in the tab. The action runs under a
// deadline of its own as well as the context's: a call to a tab the
// browser never answers would otherwise hold the test until its timeout.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := chromedp.Run(wait, a)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.v
	case <-time.After(2*time.Minute + 10*time.Second):
		t.Fatalf("%s: the browser did not answer in two minutes", what)
	}
	panic("unreachable")
}

// js is a JavaScript expression's value in the tab.
func js[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return value(t, ctx, expr, chromedp.Evaluate[T](expr))
}

// waitFor polls a JavaScript condition in the tab from Go (a background
// tab runs no animation frames and few timers) until it holds; the
// test fails after two minutes with the page's content.
func waitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !js[bool](t, ctx, "Boolean("+cond+")") {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s (%s): the page's content:\n%s", what, cond, js[string](t, ctx, "document.querySelector('main').innerText"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// present is a JavaScript condition: an element matches sel.
func present(sel string) string { return fmt.Sprintf("document.querySelector(%q)", sel) }

// text is the text of the element sel matches, spaces collapsed; "" when
// none does.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s := js[string](t, ctx, fmt.Sprintf("(document.querySelector(%q) || {}).textContent || ''", sel))
	return strings.Join(strings.Fields(s), " ")
}

func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	return js[string](t, ctx, fmt.Sprintf("(document.querySelector(%q) || {getAttribute: () => ''}).getAttribute(%q) || ''", sel, name))
}

// shot saves a full-page screenshot as NAME.png.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := value(t, ctx, "a screenshot of "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

type statusPool struct{ nodes, gpus string }

// statusRow reads pool's READY and GPU columns from berth status.
func statusRow(t *testing.T, out, pool string) statusPool {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && f[0] == pool {
			return statusPool{nodes: strings.Replace(f[2], "/", " / ", 1), gpus: f[6]}
		}
	}
	t.Fatalf("berth status lists no pool %s:\n%s", pool, out)
	return statusPool{}
}

// sampleReport is a small rehearsal report, made up, for the Rehearsals
// page (the docs' screenshot of a report is of a real rehearsal's).
func sampleReport() *report.Report {
	wait := report.Duration(12 * time.Minute)
	return &report.Report{
		Blueprint: "retail-analytics", Trace: "sample.csv", Seed: 1,
		Rehearsed: report.Duration(time.Hour), Wall: report.Duration(10 * time.Second),
		Jobs:   []report.JobResult{{Team: "team-a", Class: "training", Kind: "Job", Name: "t-1", Pods: 1, GPUs: 1, Wait: &wait, State: "Complete"}},
		Groups: []report.GroupResult{{Team: "team-a", Class: "training", Jobs: 1, Completed: 1, WaitP50: wait, WaitP95: wait, WaitMax: wait}},
	}
}

// logPageWeight logs what each page weighs with its stylesheet and
// script, as a browser fetches them the first time.
func logPageWeight(t *testing.T, base string) {
	t.Helper()
	size := func(path string) int {
		resp, err := http.Get(base + strings.TrimPrefix(path, "/"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return int(n)
	}
	assets := size("/static/dash.css") + size("/static/dash.js")
	total := assets
	var parts []string
	for _, p := range []string{"/", "/waiting", "/activity", "/workloads", "/rehearsals"} {
		n := size(p)
		total += n
		parts = append(parts, fmt.Sprintf("%s %d B", p, n))
	}
	t.Logf("page weight at the retail size: %s; stylesheet and script %d B; all five pages and assets %d B", strings.Join(parts, ", "), assets, total)
}

// pushSampleModel stores two versions of a model and moves its prod
// alias from one to the other, for the Models page.
func pushSampleModel(t *testing.T, url, dir string) {
	t.Helper()
	st, err := store.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	r := &model.Registry{Store: st}
	ctx := context.Background()
	for i, recall := range []float64{0.88, 0.91} {
		weights := filepath.Join(dir, fmt.Sprintf("weights-%d.bin", i))
		if err := os.WriteFile(weights, []byte(strings.Repeat("w", 1000*(i+1))), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Push(ctx, "embedder", weights, model.PushOptions{Metrics: map[string]float64{"recall": recall}, Source: fmt.Sprintf("train-run-%d", i+1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Promote(ctx, "embedder", i+1, "prod", fmt.Sprintf("recall %.2f", recall)); err != nil {
			t.Fatal(err)
		}
	}
}
