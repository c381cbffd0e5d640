package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// script is a Reconciler that reports each key it is given and answers
// with what answer says for the key's nth call (from 1).
type script struct {
	calls  chan string
	mu     sync.Mutex
	n      map[string]int
	answer func(key string, n int) (Result, error)
}

func (s *script) Reconcile(_ context.Context, key string) (Result, error) {
	s.mu.Lock()
	s.n[key]++
	n := s.n[key]
	s.mu.Unlock()
	s.calls <- key
	if s.answer == nil {
		return Result{}, nil
	}
	return s.answer(key, n)
}

// within waits for the next reconciled key and checks it.
func within(t *testing.T, calls <-chan string, want string) {
	t.Helper()
	select {
	case got := <-calls:
		if got != want {
			t.Fatalf("reconciled %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%q was not reconciled", want)
	}
}

// none checks that nothing is reconciled for a while.
func none(t *testing.T, calls <-chan string) {
	t.Helper()
	select {
	case got := <-calls:
		t.Fatalf("reconciled %q, want nothing", got)
	case <-time.After(300 * time.Millisecond):
	}
}

// run wires s to the nodes of a fake cluster, keyed by name and filtered
// by changed, and runs it until the test ends.
func run(t *testing.T, s *script, changed func(old, cur any) bool) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	m := NewManager(client, nil)
	err := m.Controller("test").
		WatchesChanges(factory.Core().V1().Nodes().Informer(), changed, func(obj any) []string {
			return []string{obj.(*corev1.Node).Name}
		}).
		Complete(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	m.Each(func(_ string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				t.Error(err)
			}
		}()
	})
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		wg.Wait() // Run returns once ctx ends
		factory.Shutdown()
		m.Shutdown()
	})
	return client
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestRunnerReconcilesWhatItsWatchesQueue(t *testing.T) {
	ctx := context.Background()
	s := &script{calls: make(chan string, 100), n: map[string]int{}}
	relabelled := func(old, cur any) bool {
		return old.(*corev1.Node).Labels["l"] != cur.(*corev1.Node).Labels["l"]
	}
	client := run(t, s, relabelled)
	nodes := client.CoreV1().Nodes()

	if _, err := nodes.Create(ctx, node("a", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, s.calls, "a")

	// An update changed filters out queues nothing; one it lets through
	// queues the key.
	if _, err := nodes.Update(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{"x": "y"}}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	none(t, s.calls)
	if _, err := nodes.Update(ctx, node("a", map[string]string{"l": "v"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, s.calls, "a")

	if err := nodes.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, s.calls, "a")
}

func TestRunnerRequeues(t *testing.T) {
	ctx := context.Background()
	s := &script{calls: make(chan string, 100), n: map[string]int{}, answer: func(key string, n int) (Result, error) {
		switch {
		case key == "failing" && n == 1:
			return Result{}, errors.New("try again")
		case key == "later" && n == 1:
			return Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		return Result{}, nil
	}}
	client := run(t, s, nil)

	// A failure is retried at once (the backoff starts at 5ms) and then
	// left alone.
	if _, err := client.CoreV1().Nodes().Create(ctx, node("failing", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, s.calls, "failing")
	within(t, s.calls, "failing")
	none(t, s.calls)

	// RequeueAfter comes back after its delay, not before.
	start := time.Now()
	if _, err := client.CoreV1().Nodes().Create(ctx, node("later", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, s.calls, "later")
	within(t, s.calls, "later")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("requeued after %s, want at least 200ms", d)
	}
	none(t, s.calls)
}
