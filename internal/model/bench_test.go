package model_test

import (
	"testing"

	"berth.io/berth/internal/model"
	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/model/storetest"
)

// Throughput of a BERTH_BENCH_MODEL_MB model (256 MiB by default) on the
// filesystem store, next to cp -r of the same files. Run with
// -benchtime=1x for large models.

func benchFileStore(b *testing.B) store.Store {
	s, err := store.NewFile(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkFilePush(b *testing.B) { storetest.BenchPush(b, benchFileStore) }
func BenchmarkFilePull(b *testing.B) { storetest.BenchPull(b, benchFileStore) }
func BenchmarkCopy(b *testing.B)     { storetest.BenchCopy(b) }

func BenchmarkCopyVerified(b *testing.B) { storetest.BenchCopyVerified(b) }

// list and history of 10,000 versions and 10,000 alias moves.
func BenchmarkFileList10k(b *testing.B) {
	r := &model.Registry{Store: benchFileStore(b), User: "bench"}
	storetest.Populate(b, r, 10000)
	b.ResetTimer()
	storetest.BenchListHistory(b, r, 10000)
}
