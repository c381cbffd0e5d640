package cluster

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"berth.io/berth/internal/problem"
)

// PprofEnv names the variable that turns on Go's profiler in the cluster
// process: BERTH_PPROF=127.0.0.1:6060 serves /debug/pprof/ there, for
// profiling a large rehearsal (`go tool pprof
// http://127.0.0.1:6060/debug/pprof/profile?seconds=60`). The API server's
// own profiling stays off (--profiling=false): this one covers every
// component in the process, berth's included.
//
// Not for a rehearsal's CPU: while Go's CPU profiler runs, its reader
// waits in a system call, and the rehearsal's clock waits for goroutines
// in system calls to settle, so the replay crawls and the profile shows
// an idle process. Profile a rehearsal from outside instead, with Linux
// perf (Go's frame pointers give it whole stacks): `perf record -F 199
// -g -p PID -- sleep 60`, then `perf report --children --sort symbol`.
const PprofEnv = "BERTH_PPROF"

// servePprof serves the profiler when PprofEnv asks for it.
func servePprof(progress func(format string, args ...any)) error {
	addr := os.Getenv(PprofEnv)
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return problem.Errorf("pick a free loopback address, e.g. 127.0.0.1:6060", "%s=%s: %w", PprofEnv, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	progress("profiler on http://%s/debug/pprof/", ln.Addr())
	return nil
}
