package recorded

import (
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/slim"
)

// Store keeps the recorded blueprints decoded for the controllers inside
// `berth up`. It watches only kube-system's ConfigMaps labelled
// v1alpha1.LabelBlueprint, and decodes each record once per
// resourceVersion, when it is first read after it changed.
//
// The blueprints it hands out are shared by every reader and must not be
// modified: a reader that adjusts one (the autoscaler's Tune) works on a
// copy of its own. A record keeps the same *Blueprint until its
// resourceVersion changes, so a reader may key what it derives from a
// blueprint on the pointer.
type Store struct {
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	// records is the informer's cache of the ConfigMaps.
	records cache.Store

	// mu guards decoded.
	mu sync.Mutex
	// decoded holds each record's blueprint, by ConfigMap name.
	decoded map[string]*decoded
}

type decoded struct {
	resourceVersion string
	bp              *v1alpha1.Blueprint
	err             error
}

// NewStore returns a store that watches the records through client. Its
// informer runs from Start to Shutdown.
func NewStore(client kubernetes.Interface) *Store {
	factory := slim.Informers(client, 10*time.Minute,
		informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.LabelBlueprint }))
	informer := factory.Core().V1().ConfigMaps().Informer()
	return &Store{factory: factory, informer: informer, records: informer.GetStore(), decoded: map[string]*decoded{}}
}

// Start starts the store's informer; it stops when stop closes.
func (s *Store) Start(stop <-chan struct{}) { s.factory.Start(stop) }

// Shutdown waits for the informer to stop, once stop closed.
func (s *Store) Shutdown() { s.factory.Shutdown() }

// HasSynced reports whether the store has read every record once.
func (s *Store) HasSynced() bool { return s.informer.HasSynced() }

// Informer is the store's informer, for a controller that acts when a
// record changes. Its objects are ConfigMaps; only those IsRecord accepts
// are records.
func (s *Store) Informer() cache.SharedIndexInformer { return s.informer }

// Blueprints are the recorded blueprints that decode, by name, and an
// error naming each record that does not.
func (s *Store) Blueprints() ([]*v1alpha1.Blueprint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*v1alpha1.Blueprint
	var errs []error
	seen := map[string]bool{}
	for _, obj := range s.records.List() {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || !IsRecord(cm) {
			continue
		}
		seen[cm.Name] = true
		bp, err := s.decode(cm)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, bp)
	}
	for name := range s.decoded {
		if !seen[name] {
			delete(s.decoded, name)
		}
	}
	byName(out)
	return out, errors.Join(errs...)
}

// Blueprint is the recorded blueprint named name: nil when none is
// recorded, an error when its record does not decode.
func (s *Store) Blueprint(name string) (*v1alpha1.Blueprint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok, err := s.records.GetByKey(metav1.NamespaceSystem + "/" + ConfigMapName(name))
	if err != nil {
		return nil, err
	}
	cm, _ := obj.(*corev1.ConfigMap)
	if !ok || cm == nil || !IsRecord(cm) {
		delete(s.decoded, ConfigMapName(name))
		return nil, nil
	}
	return s.decode(cm)
}

// decode is the record's blueprint, decoded again only when the record
// changed since the last time (always, for a record without a
// resourceVersion, which only a fake clientset makes). s.mu is held.
func (s *Store) decode(cm *corev1.ConfigMap) (*v1alpha1.Blueprint, error) {
	if d := s.decoded[cm.Name]; d != nil && cm.ResourceVersion != "" && d.resourceVersion == cm.ResourceVersion {
		return d.bp, d.err
	}
	bp, err := Decode(cm)
	s.decoded[cm.Name] = &decoded{resourceVersion: cm.ResourceVersion, bp: bp, err: err}
	return bp, err
}
