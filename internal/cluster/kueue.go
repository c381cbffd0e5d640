package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/simtime"
	"berth.io/berth/internal/version"
)

// KueueBinaryEnv names the berth-kueue binary to run, where it is not
// beside berth's own or on PATH.
const KueueBinaryEnv = "BERTH_KUEUE_BINARY"

// kueueBinaryName is the command cmd/berth-kueue builds.
const kueueBinaryName = "berth-kueue"

// KueueBinary finds berth-kueue, the process that runs Kueue for a
// blueprint with queueing: Kueue (cmd/berth-kueue says why it is one of
// its own): $BERTH_KUEUE_BINARY, else beside the running berth, else on
// PATH.
func KueueBinary() (string, error) {
	if p := os.Getenv(KueueBinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", &problem.Problem{
				Message: fmt.Sprintf("%s names %s, which is not there", KueueBinaryEnv, p),
				Fix:     "build it: go build -o " + p + " ./cmd/berth-kueue"}
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), kueueBinaryName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(kueueBinaryName); err == nil {
		return p, nil
	}
	return "", &problem.Problem{Field: "spec.queueing",
		Message: "is Kueue, which berth up runs as a process of its own, " + kueueBinaryName + ", and it is neither beside berth nor on PATH",
		Fix:     "build both into one folder and run berth from there: go build -o bin/ ./cmd/berth ./cmd/berth-kueue && bin/berth up -f FILE (or set " + KueueBinaryEnv + ")"}
}

// startKueue runs Kueue's controllers, scheduler and webhooks for a
// blueprint that queues with Kueue, in berth-kueue, a child process: its
// webhooks on loopback with a serving certificate from the cluster's CA,
// made at each start; its logs in the control plane's log; fair sharing
// as the blueprint says (Kueue reads it at start). kueueReady
// closes once it says Kueue admits. On a rehearsal's clock (clk),
// berth-kueue follows it: the clock asks it on its stdin to settle at
// each moment and stops at its deadlines (simtime.Remote).
func (c *Cluster) startKueue(ctx context.Context, state State, fairSharing bool, clk *simtime.Clock) error {
	binary, err := KueueBinary()
	if err != nil {
		return err
	}
	p := state.pki()
	if err := p.IssueKueueWebhook(v1alpha1.KueueVisibilityService + "." + metav1.NamespaceSystem + ".svc"); err != nil {
		return fmt.Errorf("issuing Kueue's webhook certificate: %w", err)
	}
	logs, err := os.OpenFile(state.LogFile(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + state.Kubeconfig(),
		"--tls-cert-file=" + p.KueueWebhookCert(),
		"--tls-private-key-file=" + p.KueueWebhookKey(),
		"--client-ca-bundle=" + p.CACert(),
		// Built apart from berth, it must speak berth's clock protocol
		// and run the Kueue berth's objects are written for.
		"--expect=" + version.Peer(simtime.RemoteProtocol),
	}
	if fairSharing {
		args = append(args, "--fair-sharing")
	}
	if clk != nil {
		args = append(args, "--follow-clock="+strconv.FormatInt(clk.Now().UnixNano(), 10))
	} else {
		// Not in a rehearsal, which nobody asks: its API server's
		// wall-clock work would only slow the clock's settling.
		args = append(args, "--serve-visibility")
	}
	cmd := exec.CommandContext(ctx, binary, args...)
	c.kueueReady = make(chan struct{})
	out := &readyLine{ready: sync.OnceFunc(func() { close(c.kueueReady) })}
	cmd.Stdout = out
	var remote *simtime.Remote
	if clk != nil {
		queries, err := cmd.StdinPipe()
		if err != nil {
			logs.Close()
			return err
		}
		remote = clk.Remote(v1alpha1.KueueClockFollower, queries)
		out.other = remote.Answer
	}
	last := &lastLine{}
	cmd.Stderr = io.MultiWriter(logs, last)
	cmd.SysProcAttr = childProcAttr()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		logs.Close()
		return fmt.Errorf("starting %s: %w", binary, err)
	}
	c.run(ctx, "kueue", func(ctx context.Context) error {
		defer logs.Close()
		err := cmd.Wait()
		if remote != nil {
			remote.Gone()
		}
		if ctx.Err() != nil {
			return nil
		}
		var exit *exec.ExitError
		switch {
		case err == nil:
			return fmt.Errorf("%s exited: %s; its log is in %s", binary, last.String(), state.LogFile())
		case errors.As(err, &exit):
			return fmt.Errorf("%s exited (%w): %s; its log is in %s", binary, err, last.String(), state.LogFile())
		}
		return err
	})
	return nil
}

// lastLine keeps the last line written that is not empty: berth-kueue's
// last words, which say why it stopped.
type lastLine struct {
	mu         sync.Mutex
	line, last []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range p {
		if b != '\n' {
			l.line = append(l.line, b)
			continue
		}
		if len(bytes.TrimSpace(l.line)) > 0 {
			l.last = append(l.last[:0], l.line...)
		}
		l.line = l.line[:0]
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(bytes.TrimSpace(l.last))
}

// readyLine is berth-kueue's standard output: it calls ready at the line
// "ready", points the API server's resolver at the address of the line
// "visibility ADDRESS", and passes the others to other (a Remote's
// answers), if set.
type readyLine struct {
	ready func()
	other func(string) bool
	line  []byte
}

func (r *readyLine) Write(p []byte) (int, error) {
	for _, b := range p {
		if b != '\n' {
			r.line = append(r.line, b)
			continue
		}
		switch line := strings.TrimSpace(string(r.line)); {
		case line == "ready":
			r.ready()
		case strings.HasPrefix(line, visibilityLine):
			kueueVisibility.Store(&url.URL{Scheme: "https", Host: strings.TrimPrefix(line, visibilityLine)})
		case r.other != nil:
			r.other(line)
		}
		r.line = r.line[:0]
	}
	return len(p), nil
}

// visibilityLine starts the line where berth-kueue says where it serves
// Kueue's visibility API.
const visibilityLine = "visibility "

// waitKueue waits, where the blueprint queues with Kueue, until Kueue
// admits: the blueprint's Kueue objects are applied after, so that its
// webhooks check them, and `berth up` is ready once a Job submitted is
// Kueue's.
func (c *Cluster) waitKueue(ctx context.Context) error {
	if c.kueueReady == nil {
		return nil
	}
	return c.waitFor(ctx, "Kueue's webhooks and caches", func(context.Context) (bool, error) {
		select {
		case <-c.kueueReady:
			return true, nil
		default:
			return false, nil
		}
	})
}

// retireKueue removes Kueue's webhook configurations and its visibility
// API's APIServices from a cluster started from a blueprint that does
// not queue with Kueue: left from an earlier start under Kueue, they name
// servers nothing runs. Kueue's webhooks fail closed, so every Job would
// be refused, and an APIService that does not answer fails every
// client's discovery of the cluster's APIs.
func retireKueue(ctx context.Context, client kubernetes.Interface) error {
	hooks := client.AdmissionregistrationV1()
	apis := client.Discovery().RESTClient()
	for _, del := range []func() error{
		func() error {
			return hooks.MutatingWebhookConfigurations().Delete(ctx, v1alpha1.KueueMutatingWebhooks, metav1.DeleteOptions{})
		},
		func() error {
			return hooks.ValidatingWebhookConfigurations().Delete(ctx, v1alpha1.KueueValidatingWebhooks, metav1.DeleteOptions{})
		},
	} {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing Kueue's webhooks, which nothing serves without queueing: Kueue: %w", err)
		}
	}
	for _, name := range v1alpha1.KueueVisibilityAPIServices {
		err := apis.Delete().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/" + name).Do(ctx).Error()
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing APIService %s (Kueue's visibility API), which nothing serves without queueing: Kueue: %w", name, err)
		}
	}
	return nil
}
