package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"berth.io/berth/internal/cluster"
	"berth.io/berth/internal/problem"
)

type downOptions struct {
	Streams
	name     string
	stateDir string
	purge    bool
	timeout  time.Duration
}

func newDownCommand(s Streams) *cobra.Command {
	o := &downOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop a local cluster, keeping its state (--purge deletes it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.stateDir == "" {
				o.stateDir = stateDirFor(o.name)
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVar(&o.name, "name", defaultClusterName, "cluster name")
	cmd.Flags().StringVar(&o.stateDir, "state-dir", "", "state directory (default $BERTH_HOME/clusters/NAME)")
	cmd.Flags().BoolVar(&o.purge, "purge", false, "also delete the cluster's state and its kubeconfig context")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 60*time.Second, "how long to wait for a clean stop")
	return cmd
}

func (o *downOptions) Run() error {
	state := cluster.State{Dir: o.stateDir}
	if _, err := os.Stat(o.stateDir); os.IsNotExist(err) {
		return problem.Errorf("check --name or --state-dir", "no cluster %q: %s does not exist", o.name, o.stateDir)
	}
	if state.Running() {
		if err := o.stop(state); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(o.Out, "Cluster %q is not running.\n", o.name)
	}
	if !o.purge {
		return nil
	}
	if !state.Exists() {
		if entries, _ := os.ReadDir(o.stateDir); !onlyBerthFiles(entries) {
			return problem.Errorf("check --state-dir", "%s holds no berth cluster (no cluster.json); berth will not delete it", o.stateDir)
		}
	}
	if err := os.RemoveAll(o.stateDir); err != nil {
		return fmt.Errorf("deleting %s: %w", o.stateDir, err)
	}
	if err := cluster.RemoveFromKubeconfig(o.name); err != nil {
		fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
	}
	fmt.Fprintf(o.Out, "Deleted cluster %q (%s) and its kubeconfig context %s.\n", o.name, o.stateDir, cluster.ContextName(o.name))
	return nil
}

// stop asks the serving process to shut down cleanly and waits until it
// has released the state directory.
func (o *downOptions) stop(state cluster.State) error {
	pid, err := state.Pid()
	if err != nil {
		return problem.Errorf(fmt.Sprintf("stop the berth process holding %s by hand", state.Dir), "cluster %q is running but its pid file is unreadable (%w)", o.name, err)
	}
	proc, err := os.FindProcess(pid)
	if err == nil {
		err = proc.Signal(syscall.SIGTERM)
	}
	if err != nil {
		return fmt.Errorf("signalling berth (pid %d): %w", pid, err)
	}
	fmt.Fprintf(o.Out, "Stopping cluster %q (pid %d)…\n", o.name, pid)
	deadline := time.Now().Add(o.timeout)
	for state.Running() {
		if time.Now().After(deadline) {
			return problem.Errorf(fmt.Sprintf("wait and retry, or `kill -9 %d` (etcd recovers from its log)", pid), "cluster %q (pid %d) did not stop within %s", o.name, pid, o.timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintf(o.Out, "Stopped cluster %q; its state is kept in %s.\n", o.name, state.Dir)
	return nil
}

// onlyBerthFiles reports whether a directory without cluster.json holds
// nothing but what a failed first start leaves (the lock, the log, the
// PKI, etcd's data).
func onlyBerthFiles(entries []os.DirEntry) bool {
	for _, e := range entries {
		switch filepath.Base(e.Name()) {
		case "lock", "berth.log", "berth.pid", "pki", "etcd", "kubeconfig", "blueprint.yaml", "cluster.json.tmp":
		default:
			return false
		}
	}
	return true
}
