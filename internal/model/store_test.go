package model_test

import (
	"testing"

	"berth.io/berth/internal/model/store"
	"berth.io/berth/internal/model/storetest"
)

func fileStore(t *testing.T) store.Store {
	s, err := store.NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFileStore(t *testing.T) {
	storetest.Run(t, storetest.Config{New: fileStore})
}

func TestFileRegistry(t *testing.T) {
	storetest.RunRegistry(t, storetest.Config{New: fileStore})
}
