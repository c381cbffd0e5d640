package cluster

import (
	"io"
	_ "unsafe" // for go:linkname

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdClientLogger is the logger of the API server's etcd clients, which
// k8s.io/apiserver makes at init to write JSON to stderr: a warning of
// one (a call cut short as the cluster stops, "retrying of unary invoker
// failed") would reach the user's terminal, where berth's own output
// goes.
//
//go:linkname etcdClientLogger k8s.io/apiserver/pkg/storage/storagebackend/factory.etcd3ClientLogger
var etcdClientLogger *zap.Logger

// routeEtcdClientLogs sends the etcd clients' warnings and errors to w,
// the cluster's log, as JSON lines as before. The clients take the
// logger when the API server makes them: call it before.
func routeEtcdClientLogs(w io.Writer) {
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(w), zapcore.WarnLevel)
	etcdClientLogger = zap.New(core).Named("etcd-client")
}
