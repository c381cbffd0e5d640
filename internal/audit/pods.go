package audit

import (
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
	// js is the pod as JSON; for a pod read from YAML it is nil until
	// the pod must be decoded, and yaml holds the document.
	js    []byte
	yaml  doc
	src   source
	key   Object
	owner Object // Kind and Name of the controller, if any
}

// peekPod reads what resolvePods needs of a pod document: its metadata,
// which comes before the spec in what kubectl and the API write, so the
// rest is not even scanned.
func peekPod(js []byte, src source) (rawPod, error) {
	p := rawPod{js: js, src: src, key: Object{Kind: "Pod"}}
	at := valueAt(js, "metadata")
	if at < 0 {
		return p, &badObject{"Pod: no metadata"}
	}
	meta, err := topLevel(js[at:], "name", "namespace", "generateName", "ownerReferences")
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
				if need[i].js == nil {
					data := need[i].yaml.yamlData()
					need[i].src.doc = data
					js, block, err := yamlToJSON(data)
					need[i].src.block = block
					if err != nil {
						problems[w] = append(problems[w], fmt.Sprintf("%s: not valid YAML: %v", need[i].src, err))
						continue
					}
					need[i].js = js
				}
				if err := decodePod(need[i].js, &pods[i]); err != nil {
					problems[w] = append(problems[w], fmt.Sprintf("%s: Pod: %v", need[i].src, err))
				}
			}
		})
	}
	wg.Wait()
	if len(inv.Pods) == 0 {
		// Not appended: copying 150,000 pods is a second of one core,
		// and a long copy holds up the collector's stop of the world.
		inv.Pods = pods
	} else {
		inv.Pods = append(inv.Pods, pods...)
	}
	for _, p := range need {
		inv.sources[p.key] = p.src
	}
	var all []string
	for _, p := range problems {
		all = append(all, p...)
	}
	return all
}

// peekYAMLPod is peekPod for a YAML document, read with the block reader:
// false when the document is not a v1 Pod in the block style it reads.
func peekYAMLPod(d doc, src source) (rawPod, bool) {
	// The keys come in order (apiVersion, kind, metadata) from kubectl
	// and Helm; in any other order, the whole pod is read.
	seen := 0
	top, ok := entriesUntil(d.data, d.indent, func(e entry) bool {
		switch e.key {
		case "apiVersion", "kind", "metadata":
			seen++
		}
		return seen == 3
	})
	if !ok {
		return rawPod{}, false
	}
	var apiVersion, kind string
	var meta *entry
	for i := range top {
		switch top[i].key {
		case "apiVersion":
			apiVersion, _ = scalar(top[i].value)
		case "kind":
			kind, _ = scalar(top[i].value)
		case "metadata":
			meta = &top[i]
		}
	}
	if apiVersion != "v1" || kind != "Pod" || meta == nil || meta.value != "" {
		return rawPod{}, false
	}
	indent := d.indent + 2
	fields, ok := entries(meta.body, indent)
	if !ok {
		return rawPod{}, false
	}
	p := rawPod{yaml: d, src: src, key: Object{Kind: "Pod"}}
	var generateName string
	for _, e := range fields {
		switch e.key {
		case "name":
			p.key.Name, ok = scalar(e.value)
		case "namespace":
			p.key.Namespace, ok = scalar(e.value)
		case "generateName":
			generateName, ok = scalar(e.value)
		case "ownerReferences":
			ok = e.value == ""
			if ok {
				p.owner, ok = yamlController(e.body)
			}
		}
		if !ok {
			return rawPod{}, false
		}
	}
	if p.key.Name == "" {
		p.key.Name = generateName
	}
	p.owner.Namespace = p.key.Namespace
	return p, p.key.Name != ""
}

// yamlController finds the controller among owner references.
func yamlController(body []byte) (Object, bool) {
	refs, _, indent, ok := items(body)
	if !ok {
		return Object{}, false
	}
	for _, ref := range refs {
		fields, ok := entries(ref, indent)
		if !ok {
			return Object{}, false
		}
		var o Object
		controller := false
		for _, e := range fields {
			switch e.key {
			case "controller":
				controller = e.value == "true"
			case "kind":
				o.Kind, _ = scalar(e.value)
			case "name":
				o.Name, _ = scalar(e.value)
			}
		}
		if controller {
			return o, true
		}
	}
	return Object{}, true
}

// decodePod reads what the rules read of a pod: its metadata, spec and
// phase. The rest of its status (conditions, container statuses, IPs) is
// a quarter of a running pod's JSON, and decoding is most of the cost of
// a dump of bare pods.
func decodePod(js []byte, p *corev1.Pod) error {
	top, err := topLevel(js, "apiVersion", "kind", "metadata", "spec", "status")
	if err != nil {
		return err
	}
	p.APIVersion, p.Kind = unquote(top[0]), unquote(top[1])
	top = top[2:]
	for i, into := range []any{&p.ObjectMeta, &p.Spec} {
		if top[i] != nil {
			if err := unmarshal(top[i], into); err != nil {
				return err
			}
		}
	}
	if top[2] != nil {
		st, err := topLevel(top[2], "phase")
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if st[0] != nil {
			if err := unmarshal(st[0], &p.Status.Phase); err != nil {
				return err
			}
		}
	}
	return nil
}
