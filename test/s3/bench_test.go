package s3

import (
	"testing"

	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/model/storetest"
)

// Throughput of a BERTH_BENCH_MODEL_MB model (256 MiB by default)
// through versitygw on loopback, 16 MiB parts as berth uses by default.

func benchS3(b *testing.B) store.Store {
	s := newBucket(b, endpoint)
	return s
}

func BenchmarkS3Push(b *testing.B) { storetest.BenchPush(b, benchS3) }
func BenchmarkS3Pull(b *testing.B) { storetest.BenchPull(b, benchS3) }

// list and history of 10,000 versions and 10,000 alias moves.
func BenchmarkS3List10k(b *testing.B) {
	r := &model.Registry{Store: benchS3(b), User: "bench"}
	storetest.Populate(b, r, 10000)
	b.ResetTimer()
	storetest.BenchListHistory(b, r, 10000)
}
