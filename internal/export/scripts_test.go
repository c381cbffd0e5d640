package export

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Flags each command takes, from the clouds' reference documentation:
// `az aks nodepool add` (Azure CLI, command_modules/acs/_params.py) and
// `gcloud container node-pools create` (Google Cloud SDK reference). An
// exported flag outside these lists is a typo or a flag the CLI lacks.
var knownFlags = map[string][]string{
	"az aks nodepool add": {
		"--resource-group", "--cluster-name", "--name", "--nodepool-name", "--node-vm-size", "--vm-sizes",
		"--vm-set-type", "--os-type", "--os-sku", "--snapshot-id", "--vnet-subnet-id", "--pod-subnet-id",
		"--pod-ip-allocation-mode", "--enable-node-public-ip", "--node-public-ip-prefix-id",
		"--enable-cluster-autoscaler", "--min-count", "--max-count", "--node-count", "--priority",
		"--eviction-policy", "--spot-max-price", "--labels", "--tags", "--node-taints", "--node-osdisk-type",
		"--node-osdisk-size", "--max-surge", "--max-unavailable", "--drain-timeout", "--node-soak-duration",
		"--mode", "--scale-down-mode", "--max-pods", "--zones", "--ppg", "--enable-encryption-at-host",
		"--enable-ultra-ssd", "--enable-fips-image", "--kubelet-config", "--linux-os-config",
		"--host-group-id", "--crg-id", "--gpu-instance-profile", "--gpu-driver", "--allowed-host-ports",
		"--asg-ids", "--message-of-the-day", "--enable-vtpm", "--enable-secure-boot", "--kubernetes-version",
		"--no-wait", "--aks-custom-headers", "--workload-runtime",
	},
	"az aks update": {
		"--resource-group", "--name", "--cluster-autoscaler-profile", "--no-wait",
	},
	"gcloud container clusters update": {
		"--location", "--region", "--zone", "--autoscaling-profile", "--async",
	},
	"gcloud container node-pools create": {
		"--cluster", "--location", "--region", "--zone", "--machine-type", "--num-nodes", "--node-locations",
		"--node-labels", "--node-taints", "--spot", "--preemptible", "--accelerator", "--enable-autoscaling",
		"--min-nodes", "--max-nodes", "--total-min-nodes", "--total-max-nodes", "--location-policy",
		"--max-pods-per-node", "--image-type", "--disk-size", "--disk-type", "--enable-autorepair",
		"--enable-autoupgrade", "--metadata", "--node-version", "--service-account", "--scopes", "--tags",
		"--labels", "--placement-type", "--reservation-affinity", "--reservation", "--sandbox",
		"--workload-metadata", "--max-surge-upgrade", "--max-unavailable-upgrade", "--system-config-from-file",
		"--async", "--enable-gvnic", "--enable-image-streaming", "--shielded-secure-boot",
		"--shielded-integrity-monitoring", "--min-cpu-platform", "--boot-disk-kms-key",
	},
}

// commands joins a script's continuation lines and returns its commands
// that start with one of prefixes, as words.
func commands(script string, prefix string) [][]string {
	var out [][]string
	joined := strings.ReplaceAll(script, " \\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		if strings.HasPrefix(line, prefix+" ") {
			out = append(out, strings.Fields(line))
		}
	}
	return out
}

func TestScriptFlagsAreKnown(t *testing.T) {
	for _, tb := range testBlueprints(t) {
		for command, target := range map[string]Target{
			"az aks nodepool add": AKS, "az aks update": AKS,
			"gcloud container node-pools create": GKE, "gcloud container clusters update": GKE,
		} {
			known := map[string]bool{}
			for _, f := range knownFlags[command] {
				known[f] = true
			}
			cmds := commands(export(t, tb.bp, target), command)
			want := len(tb.bp.Spec.Pools)
			if strings.HasSuffix(command, " update") {
				want = min(1, len(autoscaled(tb.bp)))
			}
			if len(cmds) != want {
				t.Errorf("%s/%s: %d %s commands, want %d", tb.name, target, len(cmds), command, want)
			}
			for _, words := range cmds {
				for _, w := range words {
					if f, _, _ := strings.Cut(w, "="); strings.HasPrefix(f, "--") && !known[f] {
						t.Errorf("%s/%s: %s has no flag %s", tb.name, target, command, f)
					}
				}
			}
		}
	}
}

func bash(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	return path
}

// TestScriptsParse runs bash -n on every exported script.
func TestScriptsParse(t *testing.T) {
	sh := bash(t)
	dir := t.TempDir()
	for _, tb := range testBlueprints(t) {
		for _, target := range []Target{AKS, GKE} {
			file := filepath.Join(dir, tb.name+"."+string(target)+".sh")
			if err := os.WriteFile(file, []byte(export(t, tb.bp, target)), 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(sh, "-n", file).CombinedOutput(); err != nil {
				t.Errorf("bash -n %s: %v\n%s", file, err, out)
			}
		}
	}
}

// fakeCLI is a stand-in az, gcloud or kubectl that logs each call's
// arguments one per line, then a separator; kubectl keeps what it reads
// in $CALLS.stdin.
const fakeCLI = `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done >> "$CALLS"
echo '--end--' >> "$CALLS"
if [ "$(basename "$0")" = kubectl ]; then cat >> "$CALLS.stdin"; fi
`

// runScript runs an exported script with fake CLIs and returns the calls
// it made, each as its arguments.
func runScript(t *testing.T, script string, env ...string) ([][]string, error) {
	calls, _, err := runScriptStdin(t, script, env...)
	return calls, err
}

// runScriptStdin is runScript that also returns what kubectl read.
func runScriptStdin(t *testing.T, script string, env ...string) ([][]string, string, error) {
	t.Helper()
	sh := bash(t)
	dir := t.TempDir()
	for _, cli := range []string{"az", "gcloud", "kubectl"} {
		if err := os.WriteFile(filepath.Join(dir, cli), []byte(fakeCLI), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file, calls := filepath.Join(dir, "export.sh"), filepath.Join(dir, "calls")
	if err := os.WriteFile(file, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, file)
	cmd.Env = append([]string{"PATH=" + dir + ":" + os.Getenv("PATH"), "CALLS=" + calls}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, "", &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: out}
	}
	data, _ := os.ReadFile(calls)
	stdin, _ := os.ReadFile(calls + ".stdin")
	var list [][]string
	var cur []string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if l == "--end--" {
			list, cur = append(list, cur), nil
			continue
		}
		cur = append(cur, l)
	}
	return list, string(stdin), nil
}

// callsOf are the calls whose arguments start with words.
func callsOf(calls [][]string, words ...string) [][]string {
	var out [][]string
	for _, c := range calls {
		if len(c) >= len(words) && strings.Join(c[:len(words)], " ") == strings.Join(words, " ") {
			out = append(out, c)
		}
	}
	return out
}

// flagValues are the arguments after flag up to the next flag.
func flagValues(args []string, flag string) []string {
	for i, a := range args {
		if a != flag {
			continue
		}
		var vs []string
		for _, v := range args[i+1:] {
			if strings.HasPrefix(v, "--") {
				break
			}
			vs = append(vs, v)
		}
		return vs
	}
	return nil
}

// TestScriptsRun runs each script against fake CLIs: the quoting must give
// each CLI the arguments berth meant, one call per pool.
func TestScriptsRun(t *testing.T) {
	for _, tb := range testBlueprints(t) {
		all, err := runScript(t, export(t, tb.bp, AKS), "RESOURCE_GROUP=rg")
		if err != nil {
			t.Fatalf("%s: aks script: %v", tb.name, err)
		}
		calls := callsOf(all, "aks", "nodepool", "add")
		if len(calls) != len(tb.bp.Spec.Pools) {
			t.Fatalf("%s: aks script made %d calls for %d pools", tb.name, len(calls), len(tb.bp.Spec.Pools))
		}
		for i, args := range calls {
			p := tb.bp.Spec.Pools[i]
			if got := flagValues(args, "--resource-group"); len(got) != 1 || got[0] != "rg" {
				t.Errorf("%s: --resource-group %q", tb.name, got)
			}
			if got := flagValues(args, "--cluster-name"); len(got) != 1 || got[0] != tb.bp.Metadata.Name {
				t.Errorf("%s: --cluster-name %q", tb.name, got)
			}
			labels := flagValues(args, "--labels")
			if !contains(labels, "berth.io/pool="+p.Name) {
				t.Errorf("%s: pool %s --labels %q lack berth.io/pool", tb.name, p.Name, labels)
			}
			if taints := flagValues(args, "--node-taints"); len(p.Taints) > 0 && len(taints) != 1 {
				t.Errorf("%s: pool %s --node-taints %q, want one comma-separated argument", tb.name, p.Name, taints)
			}
		}

		if profiles := callsOf(all, "aks", "update"); len(profiles) != min(1, len(autoscaled(tb.bp))) {
			t.Errorf("%s: aks script made %d az aks update calls", tb.name, len(profiles))
		} else if len(profiles) == 1 {
			for _, kv := range flagValues(profiles[0], "--cluster-autoscaler-profile") {
				if k, v, ok := strings.Cut(kv, "="); !ok || k == "" || v == "" {
					t.Errorf("%s: --cluster-autoscaler-profile argument %q is not KEY=VALUE", tb.name, kv)
				}
			}
		}

		all, err = runScript(t, export(t, tb.bp, GKE), "LOCATION=europe-west4")
		if err != nil {
			t.Fatalf("%s: gke script: %v", tb.name, err)
		}
		calls = callsOf(all, "container", "node-pools", "create")
		if len(calls) != len(tb.bp.Spec.Pools) {
			t.Fatalf("%s: gke script made %d calls for %d pools", tb.name, len(calls), len(tb.bp.Spec.Pools))
		}
		for i, args := range calls {
			p := tb.bp.Spec.Pools[i]
			if strings.Join(args[:4], " ") != "container node-pools create "+p.Name {
				t.Errorf("%s: gcloud called with %q", tb.name, args[:4])
			}
			if got := flagValues(args, "--location"); len(got) != 1 || got[0] != "europe-west4" {
				t.Errorf("%s: --location %q", tb.name, got)
			}
			if got := flagValues(args, "--node-labels"); len(got) != 1 || !strings.Contains(got[0], "berth.io/pool="+p.Name) {
				t.Errorf("%s: pool %s --node-labels %q", tb.name, p.Name, got)
			}
		}
	}
}

// TestScriptsNeedTheirVariables: without RESOURCE_GROUP (AKS) the script
// stops before calling anything.
func TestScriptsNeedTheirVariables(t *testing.T) {
	bp := loadBlueprint(t, base)
	_, err := runScript(t, export(t, bp, AKS))
	if err == nil {
		t.Fatal("the AKS script ran without RESOURCE_GROUP")
	}
	if e := err.(*exec.ExitError); !strings.Contains(string(e.Stderr), "set RESOURCE_GROUP") {
		t.Errorf("the AKS script failed with %q, want it to ask for RESOURCE_GROUP", e.Stderr)
	}
}
