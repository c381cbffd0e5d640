//go:build long

package dash_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth.io/berth/internal/objtest"
	"berth.io/berth/test/harness"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// `berth dash` keeps working through a restart of its cluster: a page
// open in the browser says the cluster cannot be read once `berth down`
// stops it (the server probes the API server every 5 s), says nothing of
// it once `berth up` resumes it, and shows a change made after the
// restart without a reload (the informers reconnected).
func TestDashSurvivesRestart(t *testing.T) {
	exe := browser(t)
	home := t.TempDir()
	bpFile := filepath.Join(home, "minimal.yaml")
	harness.MustBerth(t, home, "init", "--template", "minimal", bpFile)
	harness.MustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "dashr")
	t.Cleanup(func() { harness.Berth(t, home, "down", "--name", "dashr", "--purge") })

	url := harness.Dash(t, home, "--context", "berth-dashr", "-f", bpFile)

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	tab, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	defer cancel()
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	browse(t, tab, "open /waiting", chromedp.Navigate(url+"waiting"))
	waitFor(t, tab, "the page live", present(`#live.on`))
	js[bool](t, tab, `window.loadedOnce = true`)
	if failed := js[bool](t, tab, "Boolean(document.querySelector('main p.error'))"); failed {
		t.Fatalf("the page says the cluster cannot be read before it stopped:\n%s", text(t, tab, "main"))
	}

	harness.MustBerth(t, home, "down", "--name", "dashr")
	stopped := time.Now()
	waitFor(t, tab, "the page to say the cluster cannot be read", present(`main p.error`))
	t.Logf("the page said the cluster cannot be read %s after berth down", time.Since(stopped).Round(100*time.Millisecond))

	harness.MustBerth(t, home, "up", "-d", "-f", bpFile, "--name", "dashr")
	resumed := time.Now()
	waitFor(t, tab, "the error gone once the cluster is back", "!document.querySelector('main p.error')")
	t.Logf("the error went %s after berth up resumed the cluster", time.Since(resumed).Round(100*time.Millisecond))

	// A change after the restart reaches the open page.
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: filepath.Join(home, "kubeconfig")},
		&clientcmd.ConfigOverrides{CurrentContext: "berth-dashr"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	pod := objtest.MakePod("default", "after-restart").GPU("1").Tolerate("gpu").Obj()
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	waitFor(t, tab, "the pod created after the restart on Waiting", `document.querySelector('main').innerText.includes("after-restart")`)
	t.Logf("the pending pod reached the open page %s after it was created", time.Since(created).Round(100*time.Millisecond))
	if !js[bool](t, tab, "window.loadedOnce === true") {
		t.Error("the page was reloaded; want it updated in place")
	}
	if body := text(t, tab, "main"); !strings.Contains(body, "after-restart") {
		t.Errorf("Waiting does not list the pod:\n%s", body)
	}
}
