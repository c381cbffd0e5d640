package cluster

import (
	"bytes"
	"strings"
	"testing"
)

// The etcd clients' warnings go where the cluster's logs go, not to the
// terminal.
func TestEtcdClientLogsGoToTheClusterLog(t *testing.T) {
	old := etcdClientLogger
	defer func() { etcdClientLogger = old }()
	var log bytes.Buffer
	routeEtcdClientLogs(&log)
	etcdClientLogger.Warn("retrying of unary invoker failed")
	etcdClientLogger.Info("not kept")
	if got := log.String(); !strings.Contains(got, `"msg":"retrying of unary invoker failed"`) || strings.Contains(got, "not kept") {
		t.Errorf("the cluster's log holds %q", got)
	}
}
