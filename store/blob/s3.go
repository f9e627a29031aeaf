package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a Store in a bucket of an S3-compatible object store (Amazon S3 and
// the self-hosted stores that speak its API), so that the nodes of a
// cluster share media without a shared file system. It also hands out
// presigned links, for downloads that go to the store directly.
type S3 struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ending in "/"
	endpoint string // for messages
	partSize uint64

	// linkOpts are the settings of a client of the public endpoint, nil
	// when presigned links use the endpoint itself. Its client, links, is
	// made once the bucket's region is known: SigV4 signs the region and
	// the host, and minio-go asks the host for a region it is not given.
	linkOpts *minio.Options
	linkHost string
	linksMu  sync.Mutex
	links    *minio.Client
}

// S3Options configures an S3 store.
type S3Options struct {
	// Endpoint is the store's URL, e.g. https://s3.eu-central-1.amazonaws.com
	// or http://seaweedfs:8333; its scheme chooses TLS.
	Endpoint string
	// PublicEndpoint is the store's URL for those who follow presigned
	// links, when they reach it at another address than Endpoint (an
	// internal name for fleetcam, a public one for partners); empty:
	// Endpoint. No request is sent to it.
	PublicEndpoint string
	Bucket         string
	// Region is the bucket's region; empty asks the store.
	Region string
	// Prefix is put before every key, so that fleetcam can share a bucket.
	Prefix string
	// AccessKey and SecretKey sign the requests; both empty: anonymous.
	AccessKey, SecretKey string
	// PathStyle puts the bucket in the URL path (http://host/bucket/key),
	// as self-hosted stores need; false lets the client choose (virtual
	// host for Amazon's and other known endpoints, path for the rest).
	PathStyle bool
	// InsecureSkipVerify accepts any TLS certificate of the endpoint.
	InsecureSkipVerify bool
	// PartSize is the size of the parts of a multipart upload, at least
	// 5 MiB; 0: DefaultPartSize. A blob no larger than one part is
	// uploaded in one request.
	PartSize uint64
	// MaxRetries bounds the attempts of a request that failed on the way
	// (connection refused, 5xx); 0: the client's default (10).
	MaxRetries int
}

// DefaultPartSize is the part size of multipart uploads unless set.
const DefaultPartSize = 16 << 20

// minPartSize is the smallest part S3 accepts (but for the last).
const minPartSize = 5 << 20

// NewS3 returns the Store of the bucket o names. It sends no request: Check
// tells whether the bucket can be reached and written.
func NewS3(o S3Options) (*S3, error) {
	u, err := endpointURL(o.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("blob: the S3 endpoint %w", err)
	}
	if o.Bucket == "" {
		return nil, errors.New("blob: the S3 bucket is required")
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < minPartSize {
		return nil, fmt.Errorf("blob: the S3 part size must be at least %d bytes", minPartSize)
	}
	prefix := strings.Trim(o.Prefix, "/")
	if prefix != "" {
		if !ValidKey(prefix) {
			return nil, fmt.Errorf("blob: the S3 prefix %q must be slash-separated words of letters, digits, '.', '_' and '-'", o.Prefix)
		}
		prefix += "/"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	if o.InsecureSkipVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	opts := &minio.Options{Secure: u.Scheme == "https", Region: o.Region, Transport: tr, BucketLookup: minio.BucketLookupAuto,
		MaxRetries: o.MaxRetries}
	if o.PathStyle {
		opts.BucketLookup = minio.BucketLookupPath
	}
	if o.AccessKey != "" || o.SecretKey != "" {
		opts.Creds = credentials.NewStaticV4(o.AccessKey, o.SecretKey, "")
	}
	client, err := minio.New(u.Host, opts)
	if err != nil {
		return nil, fmt.Errorf("blob: S3 endpoint %s: %w", o.Endpoint, err)
	}
	s := &S3{client: client, bucket: o.Bucket, prefix: prefix, endpoint: o.Endpoint, partSize: o.PartSize}
	if o.PublicEndpoint != "" {
		pu, err := endpointURL(o.PublicEndpoint)
		if err != nil {
			return nil, fmt.Errorf("blob: the S3 public endpoint %w", err)
		}
		linkOpts := *opts
		linkOpts.Secure = pu.Scheme == "https"
		s.linkOpts, s.linkHost = &linkOpts, pu.Host
	}
	return s, nil
}

// endpointURL parses the URL of an S3 endpoint: http:// or https:// and a
// host, without a path.
func endpointURL(endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("must be an http:// or https:// URL of a host, without a path (got %q)", endpoint)
	}
	return u, nil
}

// linkClient is the client that presigns links: the store's own, or one of
// the public endpoint in the bucket's region, learnt from the store at the
// endpoint when S3Options.Region is empty.
func (s *S3) linkClient(ctx context.Context) (*minio.Client, error) {
	if s.linkOpts == nil {
		return s.client, nil
	}
	s.linksMu.Lock()
	defer s.linksMu.Unlock()
	if s.links != nil {
		return s.links, nil
	}
	region, err := s.client.GetBucketLocation(ctx, s.bucket)
	if err != nil {
		return nil, fmt.Errorf("blob: the region of %s, for links to its public endpoint: %w", s, err)
	}
	opts := *s.linkOpts
	opts.Region = region
	links, err := minio.New(s.linkHost, &opts)
	if err != nil {
		return nil, fmt.Errorf("blob: S3 public endpoint %s: %w", s.linkHost, err)
	}
	s.links = links
	return links, nil
}

// String names the bucket and the prefix, for messages.
func (s *S3) String() string {
	return fmt.Sprintf("bucket %s at %s (prefix %q)", s.bucket, s.endpoint, s.prefix)
}

func (s *S3) object(key string) (string, error) {
	if !ValidKey(key) {
		return "", fmt.Errorf("blob: invalid key %q", key)
	}
	return s.prefix + key, nil
}

// Check makes sure the bucket exists and takes a write and a delete, and
// learns its region for links to a public endpoint, so that a store that
// cannot be used stops fleetcam before it starts.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("blob: %s cannot be reached or read: %w", s, err)
	}
	if !ok {
		return fmt.Errorf("blob: %s does not exist; create it first", s)
	}
	var b [8]byte
	rand.Read(b[:])
	key := ".fleetcam-check/" + hex.EncodeToString(b[:])
	if _, err := s.Put(ctx, key, strings.NewReader("fleetcam can write here\n")); err != nil {
		return fmt.Errorf("blob: %s cannot be written: %w", s, err)
	}
	if err := s.Delete(ctx, key); err != nil {
		return fmt.Errorf("blob: %s: a written object cannot be deleted: %w", s, err)
	}
	_, err = s.linkClient(ctx)
	return err
}

// Put uploads the bytes of r. A blob that fits in one part goes in one
// request; a larger one is a multipart upload of PartSize parts, so memory
// holds a part at a time, never the whole blob. A failed upload is
// aborted and leaves no object.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	name, err := s.object(key)
	if err != nil {
		return 0, err
	}
	r = ctxReader{ctx, r}
	var head bytes.Buffer
	n, err := io.CopyN(&head, r, int64(s.partSize))
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("blob: put %s: %w", key, err)
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: s.partSize}
	if n < int64(s.partSize) {
		info, err := s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(head.Bytes()), n, opts)
		if err != nil {
			return 0, fmt.Errorf("blob: put %s: %w", key, err)
		}
		return info.Size, nil
	}
	info, err := s.client.PutObject(ctx, s.bucket, name, io.MultiReader(&head, r), -1, opts)
	if err != nil {
		return 0, fmt.Errorf("blob: put %s: %w", key, err)
	}
	return info.Size, nil
}

// Get opens the object of key. Reads and seeks turn into ranged GETs.
func (s *S3) Get(ctx context.Context, key string) (Object, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	o, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		return nil, s.fail("get", key, err)
	}
	return s3Object{Object: o, size: st.Size}, nil
}

// Delete removes the object of key; S3 answers a missing one as deleted.
func (s *S3) Delete(ctx context.Context, key string) error {
	name, err := s.object(key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil {
		return s.fail("delete", key, err)
	}
	return nil
}

// PresignGet returns a URL that GETs the object of key without
// credentials until ttl has passed, answered with the given Content-Type
// and, when filename is set, as an attachment of that name.
func (s *S3) PresignGet(ctx context.Context, key string, ttl time.Duration, contentType, filename string) (*url.URL, error) {
	name, err := s.object(key)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if contentType != "" {
		q.Set("response-content-type", contentType)
	}
	if filename != "" {
		q.Set("response-content-disposition", `inline; filename="`+filename+`"`)
	}
	links, err := s.linkClient(ctx)
	if err != nil {
		return nil, err
	}
	u, err := links.PresignedGetObject(ctx, s.bucket, name, max(ttl, time.Second), q)
	if err != nil {
		return nil, fmt.Errorf("blob: presign %s: %w", key, err)
	}
	return u, nil
}

// List calls fn with the key and size of every object under the prefix,
// in key order, until fn returns an error. The probes of Check are not listed.
func (s *S3) List(ctx context.Context, fn func(key string, size int64) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("blob: list %s: %w", s, o.Err)
		}
		key := strings.TrimPrefix(o.Key, s.prefix)
		if !ValidKey(key) || strings.HasPrefix(key, ".fleetcam-check/") {
			continue
		}
		if err := fn(key, o.Size); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// CreateBucket creates the bucket when it does not exist: for tests and
// first set-ups; fleetcam itself never creates one.
func (s *S3) CreateBucket(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err == nil && !ok {
		err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{})
	}
	if err != nil {
		return fmt.Errorf("blob: create %s: %w", s, err)
	}
	return nil
}

// fail turns the store's answer into ErrNotFound or an error naming key.
func (s *S3) fail(op, key string, err error) error {
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchKey:
		return fmt.Errorf("blob %s: %w", key, ErrNotFound)
	case minio.NoSuchBucket:
		return fmt.Errorf("blob: %s %s: %s does not exist: %w", op, key, s, err)
	}
	return fmt.Errorf("blob: %s %s: %w", op, key, err)
}

type s3Object struct {
	*minio.Object
	size int64
}

func (o s3Object) Size() int64 { return o.size }
