// Package cli holds berth's commands. Each command is a file with an
// Options struct (Complete → Validate → Run) and injected I/O streams, so
// tests drive it without a terminal.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"berth.io/berth/internal/version"
)

// Streams are a command's standard input, output and error.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// StdStreams are the process's own.
func StdStreams() Streams { return Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr} }

// ExitError ends the process with Code; Err, when set, is printed first.
// `berth validate` and `berth plan` use it for their documented exit codes.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit renders a command's error once, on w, and returns the process's
// exit status: 0 for no error, an ExitError's Code (printing its Err, if
// any), else 1. A problem renders itself, its fix included; nothing is
// added to it but the "error: " in front.
func Exit(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	code := 1
	var exit *ExitError
	if errors.As(err, &exit) {
		code, err = exit.Code, exit.Err
	}
	if err != nil {
		fmt.Fprintln(w, "error:", err)
	}
	return code
}

// kubeFlags are kubectl's --kubeconfig and --context, with kubectl's
// meaning and precedence.
type kubeFlags struct {
	kubeconfig string
	context    string
}

func (k *kubeFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
}

// NewRootCommand builds the berth command tree.
func NewRootCommand(ctx context.Context, s Streams) *cobra.Command {
	kube := &kubeFlags{}
	root := &cobra.Command{
		Use:           "berth",
		Short:         "Design, enforce and rehearse a Kubernetes cluster for ML and data workloads",
		Version:       version.Berth + " (Kubernetes " + version.Kubernetes() + ")",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetContext(ctx)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.PersistentFlags().StringVar(&kube.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (as kubectl's --kubeconfig)")
	root.PersistentFlags().StringVar(&kube.context, "context", "", "kubeconfig context to use (as kubectl's --context)")
	root.AddCommand(
		newInitCommand(s),
		newValidateCommand(s),
		newUpCommand(s),
		newDownCommand(s),
		newStatusCommand(s, kube),
		newPlanCommand(s, kube),
		newApplyCommand(s, kube),
		newExportCommand(s),
		newWhyCommand(s, kube),
		newAuditCommand(s, kube),
		newModelCommand(s, kube),
		newNodeCommand(s, kube),
		newSpotCommand(s, kube),
		newLoadCommand(s, kube),
		newNewCommand(s),
		newRehearseCommand(s),
		newRecordCommand(s, kube),
		newDashCommand(s, kube),
	)
	return root
}

// berthHome is where clusters keep their state: $BERTH_HOME, else
// ~/.berth.
func berthHome() string {
	if h := os.Getenv("BERTH_HOME"); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".berth"
	}
	return filepath.Join(home, ".berth")
}

// defaultClusterName is the cluster `berth up` and `berth down` use when
// given no --name; its kubeconfig context is berth-local.
const defaultClusterName = "local"

// stateDirFor is a named cluster's default state directory.
func stateDirFor(name string) string { return filepath.Join(berthHome(), "clusters", name) }
