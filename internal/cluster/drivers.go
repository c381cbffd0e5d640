package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"berth.io/berth/internal/problem"
	"berth.io/berth/internal/storage"
)

// A storage class's driver first seen once the cluster runs (a class a
// later `berth apply` adds, or one an earlier apply left in a resumed
// cluster) runs in a process of its own: the provisioner library's
// constructor writes client-go's global scheme, which every watch of
// this process's control plane reads (storage.Prepared). The process is
// this binary again (Child), on the cluster's kubeconfig, its log in the
// control plane's, stopped with the cluster.

// driverChild is the role of a storage driver's process: its arguments
// are --kubeconfig=FILE DRIVER.
const driverChild = "storage-driver"

// runDriver starts driver's process (storage.Late), and starts it again
// after a pause if it exits before the cluster stops.
func (c *Cluster) runDriver(ctx context.Context, driver string) error {
	if !childCapable.Load() {
		return problem.Errorf("call cluster.Child first in the binary's main, as cmd/berth and test/harness.Main do",
			"storage driver %s would run in a process of its own, this binary started again, but this binary does not run as one", driver)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary, to run storage driver %s: %w", driver, err)
	}
	c.children.Go(func() {
		pause := time.Second
		for {
			began := time.Now()
			err := c.driverProcess(ctx, exe, driver)
			if ctx.Err() != nil {
				return
			}
			if time.Since(began) > time.Minute {
				pause = time.Second
			}
			klog.ErrorS(err, "a storage driver's process stopped; starting it again", "driver", driver, "pause", pause)
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Minute)
		}
	})
	return nil
}

// driverProcess runs driver's process until it exits, and says why it
// did.
func (c *Cluster) driverProcess(ctx context.Context, exe, driver string) error {
	logs, err := os.OpenFile(c.State.LogFile(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer logs.Close()
	cmd := exec.CommandContext(ctx, exe, "--kubeconfig="+c.State.Kubeconfig(), driver)
	cmd.Env = append(os.Environ(), childEnv+"="+driverChild)
	// Its standard input stays open, unwritten, while this process
	// lives: the driver stops at its end, however this process ends.
	if _, err := cmd.StdinPipe(); err != nil {
		return err
	}
	last := &lastLine{}
	cmd.Stdout, cmd.Stderr = logs, io.MultiWriter(logs, last)
	cmd.SysProcAttr = childProcAttr()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", exe, err)
	}
	klog.InfoS("a storage driver first seen after start runs in a process of its own", "driver", driver, "pid", cmd.Process.Pid)
	err = cmd.Wait()
	if err == nil {
		err = errors.New("exited")
	}
	if words := last.String(); words != "" {
		return fmt.Errorf("%w; its last line: %s", err, words)
	}
	return err
}

// serveDriver is a storage driver's process: it runs the driver until
// the cluster stops it (SIGTERM) or its standard input ends.
func serveDriver(args []string) error {
	fs := flag.NewFlagSet(driverChild, flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "the cluster's kubeconfig")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" || fs.NArg() != 1 {
		return problem.Errorf("a cluster starts it, with --kubeconfig=FILE CLASS"+storage.DriverSuffix,
			"a storage driver's process takes the cluster's kubeconfig and one driver, not %q", args)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	// As the cluster's own clients.
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(protobuf(cfg))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return storage.Serve(ctx, client, fs.Arg(0))
}
