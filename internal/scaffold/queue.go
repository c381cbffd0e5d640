package scaffold

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"berth.io/berth/api/v1alpha1"
	"berth.io/berth/internal/problem"
)

// queueURLForms is the fix for a --queue URL berth cannot read.
const queueURLForms = "pass amqp://HOST/QUEUE (RabbitMQ; amqp://USER:PASSWORD@HOST:5672/VHOST/QUEUE), " +
	"kafka://BROKER:9092[,BROKER:9092]/TOPIC[?group=GROUP] (Kafka), or " +
	"https://sqs.REGION.amazonaws.com/ACCOUNT/QUEUE or sqs://REGION/QUEUE (SQS)"

// workQueue is the queue a batch worker drains, and where berth read it.
type workQueue struct {
	*v1alpha1.Queue
	// name is the queue's name as its depth metric is labelled
	// (queue=NAME): a RabbitMQ queue, a Kafka topic, an SQS queue.
	name string
	// fromClass is true when the class's scaling.queue gave it, false
	// when --queue did.
	fromClass bool
}

// resolveQueue is the batch worker's queue: the class's scaling.queue,
// else the one --queue names, else nil.
func resolveQueue(class *v1alpha1.Class, o Options) (*workQueue, error) {
	if s := class.Scaling; s != nil && s.Queue != nil {
		if o.Queue != "" {
			return nil, problem.Errorf("drop --queue, or pass a --class without a queue", "--queue %s: class %s drains its own %s queue (%s), set in the blueprint's scaling.queue", o.Queue, class.Name, s.Queue.Type, queueName(s.Queue))
		}
		q := &workQueue{Queue: s.Queue, name: queueName(s.Queue), fromClass: true}
		if errs := validation.IsValidLabelValue(q.name); len(errs) > 0 && o.Scaler != ScalerKEDA {
			return nil, problem.Errorf("scale it with --scaler keda, which reads the queue by name", "class %s's queue %q cannot be a label value, as its depth metric's selector (%s=NAME) needs: %s", class.Name, q.name, v1alpha1.MetricQueueLabel, strings.Join(errs, "; "))
		}
		return q, nil
	}
	if o.Queue == "" {
		return nil, nil
	}
	q, err := parseQueueURL(o.Queue, o.Name)
	if err != nil {
		return nil, err
	}
	if errs := validation.IsValidLabelValue(q.name); len(errs) > 0 && o.Scaler != ScalerKEDA {
		return nil, problem.Errorf("name the queue with at most 63 letters, digits, '-', '_' and '.'", "--queue %s: queue name %q cannot be a label value, as its depth metric's selector (%s=NAME) needs: %s", o.Queue, q.name, v1alpha1.MetricQueueLabel, strings.Join(errs, "; "))
	}
	return q, nil
}

// queueName is the name a queue's depth is labelled with.
func queueName(q *v1alpha1.Queue) string {
	switch q.Type {
	case v1alpha1.QueueRabbitMQ:
		return q.QueueName
	case v1alpha1.QueueKafka:
		return q.Topic
	}
	// An SQS queue's URL ends in its name; a bare name is its own.
	return path.Base(q.QueueURL)
}

// parseQueueURL reads a --queue URL:
//
//	amqp[s]://[USER:PASSWORD@]HOST[:PORT]/[VHOST/]QUEUE   rabbitmq, the last path segment the queue
//	kafka://BROKER[,BROKER]/TOPIC[?group=GROUP]            kafka, the consumer group the worker's name by default
//	https://sqs.REGION.amazonaws.com/ACCOUNT/QUEUE         sqs
//	sqs://REGION/QUEUE                                     sqs, the queue by name (KEDA resolves it in the region)
//
// A rabbitmq queue's host is read by KEDA from Secret WORKER-rabbitmq.
func parseQueueURL(raw, worker string) (*workQueue, error) {
	fail := func(why string) error {
		return problem.Errorf(queueURLForms, "--queue %s: %s", raw, why)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fail(err.Error())
	}
	if u.Scheme == "" {
		return nil, fail("not a URL: berth reads the queue's type from the URL's scheme")
	}
	if u.Host == "" {
		return nil, fail("no host: berth reads the queue's type from the URL's scheme and its name from the path")
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	last := segs[len(segs)-1]
	switch strings.ToLower(u.Scheme) {
	case "amqp", "amqps":
		if last == "" {
			return nil, fail("no queue: the last path segment names the RabbitMQ queue")
		}
		return &workQueue{Queue: &v1alpha1.Queue{Type: v1alpha1.QueueRabbitMQ, QueueName: last, HostSecret: worker + "-rabbitmq",
			Target: v1alpha1.DefaultQueueTarget}, name: last}, nil
	case "kafka":
		if last == "" || len(segs) > 1 {
			return nil, fail("want one path segment, the Kafka topic")
		}
		group := u.Query().Get("group")
		if group == "" {
			group = worker
		}
		return &workQueue{Queue: &v1alpha1.Queue{Type: v1alpha1.QueueKafka, BootstrapServers: u.Host, Topic: last, ConsumerGroup: group,
			Target: v1alpha1.DefaultQueueTarget}, name: last}, nil
	case "sqs":
		if last == "" || len(segs) > 1 {
			return nil, fail("want sqs://REGION/QUEUE")
		}
		return &workQueue{Queue: &v1alpha1.Queue{Type: v1alpha1.QueueSQS, QueueURL: last, AWSRegion: u.Host,
			Target: v1alpha1.DefaultQueueTarget}, name: last}, nil
	case "https":
		region, ok := strings.CutPrefix(u.Hostname(), "sqs.")
		if region, ok2 := strings.CutSuffix(region, ".amazonaws.com"); ok && ok2 && region != "" && len(segs) == 2 && last != "" {
			return &workQueue{Queue: &v1alpha1.Queue{Type: v1alpha1.QueueSQS, QueueURL: raw, AWSRegion: region,
				Target: v1alpha1.DefaultQueueTarget}, name: last}, nil
		}
		return nil, fail("an https queue URL is SQS's, https://sqs.REGION.amazonaws.com/ACCOUNT/QUEUE")
	}
	return nil, fail(fmt.Sprintf("berth does not know the scheme %q", u.Scheme))
}
