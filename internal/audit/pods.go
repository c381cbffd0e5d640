package audit

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Pods are most of a cluster's objects, and a pod made by a Deployment
// says nothing its template does not. So pods read from files are first
// only peeked at (name, namespace, controller, phase) by the JSON
// scanner, and decoded in full only when audit must check them itself.

// rawPod is a pod document peeked at but not decoded.
type rawPod struct {
	js    []byte
	src   source
	key   Object
	owner Object // Kind and Name of the controller, if any
}

// peekPod reads what resolvePods needs of a pod document: its metadata,
// which comes before the spec in what kubectl and the API write, so the
// rest is not even scanned.
func peekPod(js []byte, src source) (rawPod, error) {
	p := rawPod{js: js, src: src, key: Object{Kind: "Pod"}}
	top, err := topLevel(js, "metadata")
	if err != nil || top[0] == nil {
		return p, &badObject{"Pod: no metadata"}
	}
	meta, err := topLevel(top[0], "name", "namespace", "generateName", "ownerReferences")
	if err != nil {
		return p, &badObject{"Pod: metadata: " + err.Error()}
	}
	p.key.Name, p.key.Namespace = unquote(meta[0]), unquote(meta[1])
	if p.key.Name == "" {
		p.key.Name = unquote(meta[2])
	}
	if p.key.Name == "" {
		return p, &badObject{"Pod has no metadata.name"}
	}
	if meta[3] != nil {
		refs, err := elements(meta[3])
		if err != nil {
			return p, &badObject{"Pod: metadata.ownerReferences: " + err.Error()}
		}
		for _, ref := range refs {
			r, err := topLevel(ref, "controller", "kind", "name")
			if err == nil && string(r[0]) == "true" {
				p.owner = Object{Kind: unquote(r[1]), Namespace: p.key.Namespace, Name: unquote(r[2])}
			}
		}
	}
	return p, nil
}

// resolvePods decodes the pending pods that no audited controller stands
// for, on every core, and counts the rest. (Pods that have ended are
// decoded too, and then skipped by the rules.)
func (inv *Inventory) resolvePods() []string {
	present := inv.controllers()
	var need []rawPod
	for _, p := range inv.pending {
		if present[p.owner] {
			inv.represented++
			continue
		}
		need = append(need, p)
	}
	inv.pending = nil
	workers := min(runtime.GOMAXPROCS(0), len(need)/64+1)
	pods := make([]corev1.Pod, len(need))
	problems := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(need); i += workers {
				if err := json.Unmarshal(need[i].js, &pods[i]); err != nil {
					problems[w] = append(problems[w], fmt.Sprintf("%s: Pod: %v", need[i].src, err))
				}
			}
		})
	}
	wg.Wait()
	inv.Pods = append(inv.Pods, pods...)
	for _, p := range need {
		inv.sources[p.key] = p.src
	}
	var all []string
	for _, p := range problems {
		all = append(all, p...)
	}
	return all
}
