package spot

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"berth.io/berth/api/v1alpha1"
)

// The record of interruptions `berth status` shows: a ConfigMap in
// kube-system, the newest last, at most keep of them.
const (
	RecordConfigMap = "berth-spot-interruptions"
	recordKey       = "interruptions"
	keep            = 50
)

// Interruption is one node taken away.
type Interruption struct {
	Node   string      `json:"node"`
	Pool   string      `json:"pool"`
	Zone   string      `json:"zone"`
	At     metav1.Time `json:"at"`
	Notice string      `json:"notice"`
	Pods   int         `json:"pods"`
}

func remember(ctx context.Context, c kubernetes.Interface, n *corev1.Node, at time.Time, notice time.Duration, pods int) error {
	cms := c.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	cm, err := cms.Get(ctx, RecordConfigMap, metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return err
	}
	if create {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RecordConfigMap, Namespace: metav1.NamespaceSystem}}
	}
	list, err := Read(cm)
	if err != nil {
		list = nil // an unreadable record is started over
	}
	list = append(list, Interruption{
		Node: n.Name, Pool: n.Labels[v1alpha1.LabelPool], Zone: n.Labels[corev1.LabelTopologyZone],
		At: metav1.NewTime(at.Truncate(time.Second)), Notice: notice.String(), Pods: pods,
	})
	if len(list) > keep {
		list = list[len(list)-keep:]
	}
	raw, err := yaml.Marshal(list)
	if err != nil {
		return err
	}
	cm.Data = map[string]string{recordKey: string(raw)}
	if create {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: v1alpha1.FieldManagerSpot})
	} else {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: v1alpha1.FieldManagerSpot})
	}
	if err != nil {
		return fmt.Errorf("recording the interruption of %s: %w", n.Name, err)
	}
	return nil
}

// Read decodes the record.
func Read(cm *corev1.ConfigMap) ([]Interruption, error) {
	var list []Interruption
	if err := yaml.Unmarshal([]byte(cm.Data[recordKey]), &list); err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return list, nil
}
