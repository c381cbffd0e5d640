package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"berth.io/berth/internal/problem"
)

// S3Config is how to reach an S3 API: AWS S3, Cloudflare R2, MinIO,
// versitygw, Google Cloud Storage's XML API.
type S3Config struct {
	Bucket string
	// Prefix is prepended to every key ("" or "a/b/").
	Prefix string
	// Endpoint is host[:port]. Empty means s3.amazonaws.com.
	Endpoint string
	// Insecure speaks plain HTTP.
	Insecure bool
	// Region is the bucket's region. Empty lets the client discover it.
	Region string
	// AccessKey, SecretKey and SessionToken are static credentials. Empty
	// means the AWS chain: environment, ~/.aws/credentials, instance role.
	AccessKey, SecretKey, SessionToken string
	// CABundle is a PEM file of extra certificate authorities.
	CABundle string
	// SkipVerify turns TLS certificate checks off (S3_VERIFY_SSL=0).
	SkipVerify bool
	// VirtualHost addresses the bucket as BUCKET.ENDPOINT. False means
	// path style for a custom endpoint and the default for AWS.
	VirtualHost bool
	// PartSize is the multipart part size. Zero means DefaultPartSize.
	PartSize uint64
	// Transport, when set, carries every request (tests cut connections
	// with it).
	Transport http.RoundTripper
}

// S3ConfigFromEnv reads the environment the AWS SDKs and KServe's storage
// initializer read: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL / S3_ENDPOINT,
// AWS_REGION / AWS_DEFAULT_REGION, S3_USE_HTTPS, S3_VERIFY_SSL,
// AWS_CA_BUNDLE and S3_USER_VIRTUAL_BUCKET.
func S3ConfigFromEnv(storeURL string) (S3Config, error) {
	rest := strings.TrimPrefix(storeURL, "s3://")
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return S3Config{}, problem.Errorf("write it as s3://BUCKET/PREFIX", "model store %q names no bucket", storeURL)
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	cfg := S3Config{
		Bucket: bucket, Prefix: prefix,
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"), SessionToken: os.Getenv("AWS_SESSION_TOKEN"),
		Region:   firstEnv("AWS_REGION", "AWS_DEFAULT_REGION"),
		CABundle: os.Getenv("AWS_CA_BUNDLE"),
	}
	endpoint := firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "S3_ENDPOINT")
	if v := os.Getenv("S3_USE_HTTPS"); v == "0" || strings.EqualFold(v, "false") {
		cfg.Insecure = true
	}
	if v := os.Getenv("S3_VERIFY_SSL"); v == "0" || strings.EqualFold(v, "false") {
		cfg.SkipVerify = true
	}
	cfg.VirtualHost = strings.EqualFold(os.Getenv("S3_USER_VIRTUAL_BUCKET"), "true")
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return S3Config{}, problem.Errorf("set S3_ENDPOINT to host:port or http(s)://host:port", "S3 endpoint %q is not a URL or host:port", endpoint)
		}
		endpoint, cfg.Insecure = u.Host, u.Scheme == "http"
	}
	cfg.Endpoint = endpoint
	return cfg, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// S3 is a store in an S3 bucket under a prefix.
type S3 struct {
	cfg  S3Config
	core *minio.Core
}

// NewS3 connects (lazily: no request is made) to an S3 API.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{}})
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	}
	opts := &minio.Options{Creds: creds, Secure: !cfg.Insecure, Region: cfg.Region, Transport: cfg.Transport}
	switch {
	case cfg.VirtualHost:
		opts.BucketLookup = minio.BucketLookupDNS
	case cfg.Endpoint != "":
		opts.BucketLookup = minio.BucketLookupPath
	}
	if opts.Transport == nil && (cfg.CABundle != "" || cfg.SkipVerify) {
		tr, err := minio.DefaultTransport(!cfg.Insecure)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.SkipVerify}
		if cfg.CABundle != "" {
			pem, err := os.ReadFile(cfg.CABundle)
			if err != nil {
				return nil, problem.Errorf("point it at a readable PEM file", "AWS_CA_BUNDLE: %w", err)
			}
			pool, _ := x509.SystemCertPool()
			if pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, problem.Errorf("point it at the CA's PEM file", "AWS_CA_BUNDLE %s holds no PEM certificate", cfg.CABundle)
			}
			tr.TLSClientConfig.RootCAs = pool
		}
		opts.Transport = tr
	}
	core, err := minio.NewCore(endpoint, opts)
	if err != nil {
		return nil, problem.Errorf("check S3_ENDPOINT (host:port)", "model store s3://%s: %w", cfg.Bucket, err)
	}
	return &S3{cfg: cfg, core: core}, nil
}

func (s *S3) String() string {
	return "s3://" + s.cfg.Bucket + "/" + strings.TrimSuffix(s.cfg.Prefix, "/")
}

func (s *S3) key(k string) string { return s.cfg.Prefix + k }

// s3Err maps the S3 errors the registry acts on; others are explained.
func (s *S3) s3Err(op, key string, err error) error {
	r := minio.ToErrorResponse(err)
	switch {
	case r.Code == "NoSuchKey" || r.StatusCode == http.StatusNotFound && r.Code != "NoSuchBucket":
		return fmt.Errorf("%w: %s", ErrNotExist, key)
	case r.Code == "NoSuchBucket":
		return problem.Errorf(fmt.Sprintf("create it (aws s3 mb s3://%s) or correct the store URL", s.cfg.Bucket), "model store %s: bucket %s does not exist", s, s.cfg.Bucket)
	case r.Code == "AccessDenied" || r.Code == "InvalidAccessKeyId" || r.Code == "SignatureDoesNotMatch":
		return problem.Errorf("check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and that they may read and write the bucket", "model store %s: %s %s: %s (%s)", s, op, key, r.Message, r.Code)
	}
	return fmt.Errorf("model store %s: %s %s: %w", s, op, key, err)
}

func (s *S3) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	opts := minio.GetObjectOptions{}
	if offset > 0 {
		if err := opts.SetRange(offset, 0); err != nil {
			return nil, err
		}
	}
	body, _, _, err := s.core.GetObject(ctx, s.cfg.Bucket, s.key(key), opts)
	if err != nil {
		return nil, s.s3Err("reading", key, err)
	}
	return body, nil
}

func (s *S3) Stat(ctx context.Context, key string) (Object, error) {
	info, err := s.core.StatObject(ctx, s.cfg.Bucket, s.key(key), minio.StatObjectOptions{})
	if err != nil {
		return Object{}, s.s3Err("reading", key, err)
	}
	return Object{Key: key, Size: info.Size, ETag: info.ETag, Modified: info.LastModified}, nil
}

func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	// Digests are verified on every pull, so the payload is not hashed
	// again for the signature.
	_, err := s.core.Client.PutObject(ctx, s.cfg.Bucket, s.key(key), r, size, minio.PutObjectOptions{
		PartSize: s.cfg.PartSize, ContentType: "application/octet-stream", DisableContentSha256: true,
	})
	if err != nil {
		return s.s3Err("writing", key, err)
	}
	return nil
}

func (s *S3) ReadAll(ctx context.Context, key string) ([]byte, string, error) {
	body, info, _, err := s.core.GetObject(ctx, s.cfg.Bucket, s.key(key), minio.GetObjectOptions{})
	if err != nil {
		return nil, "", s.s3Err("reading", key, err)
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, "", s.s3Err("reading", key, err)
	}
	return data, strings.Trim(info.ETag, `"`), nil
}

func (s *S3) putIf(ctx context.Context, key string, data []byte, set func(*minio.PutObjectOptions), conflict error) (string, error) {
	opts := minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true}
	set(&opts)
	info, err := s.core.Client.PutObject(ctx, s.cfg.Bucket, s.key(key), strings.NewReader(string(data)), int64(len(data)), opts)
	if err != nil {
		r := minio.ToErrorResponse(err)
		// 412: the condition failed; 409: a concurrent conditional
		// write to the same key was in flight (AWS S3).
		if r.StatusCode == http.StatusPreconditionFailed || r.Code == "PreconditionFailed" || r.StatusCode == http.StatusConflict {
			return "", conflict
		}
		if r.StatusCode == http.StatusNotImplemented {
			return "", problem.Errorf("use an S3 API that does (AWS S3, R2, MinIO, versitygw 1.8); without them two promotions could overwrite each other", "model store %s does not support conditional writes (If-Match / If-None-Match): %w", s, err)
		}
		return "", s.s3Err("writing", key, err)
	}
	return strings.Trim(info.ETag, `"`), nil
}

func (s *S3) Create(ctx context.Context, key string, data []byte) (string, error) {
	return s.putIf(ctx, key, data, func(o *minio.PutObjectOptions) { o.SetMatchETagExcept("*") }, ErrExists)
}

func (s *S3) Replace(ctx context.Context, key string, data []byte, etag string) (string, error) {
	return s.putIf(ctx, key, data, func(o *minio.PutObjectOptions) { o.SetMatchETag(etag) }, ErrChanged)
}

func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	for o := range s.core.Client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.key(prefix), Recursive: true}) {
		if o.Err != nil {
			return nil, s.s3Err("listing", prefix, o.Err)
		}
		out = append(out, Object{Key: strings.TrimPrefix(o.Key, s.cfg.Prefix), Size: o.Size, ETag: strings.Trim(o.ETag, `"`), Modified: o.LastModified})
	}
	return out, nil
}

func (s *S3) Delete(ctx context.Context, key string) error {
	err := s.core.Client.RemoveObject(ctx, s.cfg.Bucket, s.key(key), minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(s.s3Err("deleting", key, err), ErrNotExist) {
		return s.s3Err("deleting", key, err)
	}
	return nil
}

func (s *S3) Children(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	full := s.key(prefix)
	for o := range s.core.Client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: full}) {
		if o.Err != nil {
			return nil, s.s3Err("listing", prefix, o.Err)
		}
		if name := strings.TrimSuffix(strings.TrimPrefix(o.Key, full), "/"); name != "" {
			out = append(out, name)
		}
	}
	return out, nil
}
