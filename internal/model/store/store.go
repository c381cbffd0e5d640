// Package store holds model artifacts: a Store is a flat namespace of keys
// (slash-separated) in a directory or an S3 bucket. Large objects stream
// in and out; small ones (manifests, alias moves) can be written
// conditionally, which is what makes the registry's alias moves
// compare-and-swap.
package store

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"berth.io/berth/internal/problem"
)

// Errors a Store returns, matched with errors.Is.
var (
	// ErrNotExist: no object has that key.
	ErrNotExist = errors.New("no such object")
	// ErrExists: Create found the key already taken.
	ErrExists = errors.New("object already exists")
	// ErrChanged: Replace found the object changed since it was read.
	ErrChanged = errors.New("object changed since it was read")
)

// Object is a stored object's key, size and entity tag.
type Object struct {
	Key  string
	Size int64
	// ETag identifies the content; it is set by ReadAll, Create and
	// Replace and may be empty elsewhere.
	ETag string
	// Modified is when the object was last written.
	Modified time.Time
}

// Store is where models live.
type Store interface {
	// Open reads key from byte offset on.
	Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error)
	// Stat reports key's size, or ErrNotExist.
	Stat(ctx context.Context, key string) (Object, error)
	// Put streams size bytes from r to key, replacing what is there. The
	// object appears whole or not at all.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// ReadAll reads a small object whole, with its ETag.
	ReadAll(ctx context.Context, key string) ([]byte, string, error)
	// Create writes a small object only if key is free (S3 If-None-Match:
	// *), else ErrExists. Of two concurrent Creates exactly one wins.
	Create(ctx context.Context, key string, data []byte) (string, error)
	// Replace writes a small object only if its ETag is still etag (S3
	// If-Match), else ErrChanged.
	Replace(ctx context.Context, key string, data []byte, etag string) (string, error)
	// List returns the objects whose keys start with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Children returns the names one level below prefix (which ends in
	// "/"): "a" and "b" for keys prefix+"a/x" and prefix+"b".
	Children(ctx context.Context, prefix string) ([]string, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// String is the store's URL.
	String() string
}

// DefaultPartSize is the S3 multipart part size: objects larger than this
// are uploaded in parts of this size.
const DefaultPartSize = 16 << 20

// Open returns the store a URL names: file://DIR (or a bare path) or
// s3://BUCKET/PREFIX, configured from the environment as the AWS SDKs and
// KServe are (see S3Config).
func Open(url string) (Store, error) {
	switch {
	case strings.HasPrefix(url, "s3://"):
		cfg, err := S3ConfigFromEnv(url)
		if err != nil {
			return nil, err
		}
		return NewS3(cfg)
	case strings.HasPrefix(url, "file://"):
		return NewFile(strings.TrimPrefix(url, "file://"))
	case strings.Contains(url, "://"):
		return nil, problem.Errorf("use one of those (Cloudflare R2, MinIO and Google Cloud Storage's XML API are s3:// stores with S3_ENDPOINT set)", "model store %q: berth reads file://DIR and s3://BUCKET/PREFIX stores", url)
	default:
		return NewFile(url)
	}
}
