package configs

import (
	"fmt"
	"net/url"
	"strings"
)

// MediaS3 keeps media in a bucket of an S3-compatible object store (Amazon
// S3, or a self-hosted store that speaks its API), so that the nodes of a
// cluster share media without a shared file system. Empty Endpoint: media
// stays in media.dir.
type MediaS3 struct {
	// Endpoint is the store's URL, http:// or https:// (which chooses
	// TLS), without a path: https://s3.eu-central-1.amazonaws.com,
	// http://seaweedfs.internal:8333.
	Endpoint string `yaml:"endpoint"`
	// Bucket holds the media; fleetcam does not create it.
	Bucket string `yaml:"bucket"`
	// Region is the bucket's region; empty: asked of the store.
	Region string `yaml:"region"`
	// Prefix is put before every object name (fleetcam/media/...), so that
	// fleetcam can share a bucket; empty: none.
	Prefix string `yaml:"prefix"`
	// AccessKey and SecretKey sign the requests; empty: the
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables,
	// and when those are empty too, anonymous requests.
	AccessKey string `yaml:"accessKey"`
	SecretKey string `yaml:"secretKey"`
	// PathStyle puts the bucket in the URL path (http://host/bucket/object),
	// as most self-hosted stores need; false lets the client choose:
	// virtual-hosted for Amazon's endpoints, path style for the rest.
	PathStyle bool `yaml:"pathStyle"`
	// TLSInsecureSkipVerify accepts any certificate of an https endpoint
	// (a self-signed one in a test set-up); never in production.
	TLSInsecureSkipVerify bool `yaml:"tlsInsecureSkipVerify"`
	// Proxy serves downloads through fleetcam, as with media.dir, instead
	// of redirecting partners to a presigned link of the object: for stores
	// partners cannot reach.
	Proxy bool `yaml:"proxy"`
	// PublicEndpoint is the store's URL in presigned links, when partners
	// reach it at another address than fleetcam does (Endpoint an internal
	// name, this a public one). fleetcam sends it no request: links are
	// signed for its host in the bucket's region. Empty: Endpoint.
	PublicEndpoint string `yaml:"publicEndpoint"`
	// PartSizeMB is the part size of multipart uploads in MiB; a file no
	// larger than a part is uploaded in one request. Each upload in
	// progress holds up to two parts in memory.
	PartSizeMB int `yaml:"partSizeMB"`
}

// Enabled reports whether media is kept in S3.
func (m MediaS3) Enabled() bool { return m.Endpoint != "" }

// mediaEnv names the environment variables of the media store.
func (c *Config) mediaEnv() []envVar {
	s := &c.Media.S3
	return []envVar{
		{"FLEETCAM_MEDIA_S3_ENDPOINT", &s.Endpoint},
		{"FLEETCAM_MEDIA_S3_BUCKET", &s.Bucket},
		{"FLEETCAM_MEDIA_S3_REGION", &s.Region},
		{"FLEETCAM_MEDIA_S3_PREFIX", &s.Prefix},
		{"FLEETCAM_MEDIA_S3_ACCESS_KEY", &s.AccessKey},
		{"FLEETCAM_MEDIA_S3_SECRET_KEY", &s.SecretKey},
		{"FLEETCAM_MEDIA_S3_PATH_STYLE", &s.PathStyle},
		{"FLEETCAM_MEDIA_S3_TLS_INSECURE_SKIP_VERIFY", &s.TLSInsecureSkipVerify},
		{"FLEETCAM_MEDIA_S3_PROXY", &s.Proxy},
		{"FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT", &s.PublicEndpoint},
	}
}

// applyAWSEnv takes the S3 keys from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY when neither the file nor FLEETCAM_MEDIA_S3_*
// set them.
func (m *MediaS3) applyAWSEnv(getenv func(string) string) {
	if m.AccessKey == "" && m.SecretKey == "" {
		m.AccessKey, m.SecretKey = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	}
}

// checkMedia reports the first media store setting that is wrong, by name.
func (c *Config) checkMedia() error {
	s := c.Media.S3
	if !s.Enabled() {
		return nil
	}
	switch {
	case !hostURL(s.Endpoint):
		return fmt.Errorf("config: media.s3.endpoint (FLEETCAM_MEDIA_S3_ENDPOINT) must be an http:// or https:// URL of a host without a path, "+
			"e.g. https://s3.eu-central-1.amazonaws.com (got %q)", s.Endpoint)
	case s.PublicEndpoint != "" && !hostURL(s.PublicEndpoint):
		return fmt.Errorf("config: media.s3.publicEndpoint (FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT) must be an http:// or https:// URL of a host without a path, "+
			"e.g. https://media.example.com (got %q)", s.PublicEndpoint)
	case s.PublicEndpoint != "" && s.Proxy:
		return fmt.Errorf("config: media.s3.publicEndpoint (FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT) names the store's address in download links, " +
			"and media.s3.proxy (FLEETCAM_MEDIA_S3_PROXY) serves downloads through fleetcam instead: set one of them")
	case s.Bucket == "":
		return fmt.Errorf("config: media.s3.bucket (FLEETCAM_MEDIA_S3_BUCKET) is required with media.s3.endpoint")
	case !validBucket(s.Bucket):
		return fmt.Errorf("config: media.s3.bucket must be 3 to 63 lower-case letters, digits, '.' and '-' (got %q)", s.Bucket)
	case !validPrefix(s.Prefix):
		return fmt.Errorf("config: media.s3.prefix must be words of letters, digits, '.', '_' and '-' separated by '/' (got %q)", s.Prefix)
	case (s.AccessKey == "") != (s.SecretKey == ""):
		return fmt.Errorf("config: media.s3.accessKey and media.s3.secretKey (FLEETCAM_MEDIA_S3_ACCESS_KEY, FLEETCAM_MEDIA_S3_SECRET_KEY) go together: set both, or neither for anonymous requests")
	case s.PartSizeMB < 5 || s.PartSizeMB > 5120:
		return fmt.Errorf("config: media.s3.partSizeMB must be from 5 to 5120 (S3's smallest and largest part)")
	case c.Media.Dir != "":
		return fmt.Errorf("config: media.dir (FLEETCAM_MEDIA_DIR) and media.s3.endpoint (FLEETCAM_MEDIA_S3_ENDPOINT) are both set: media is kept in one place; " +
			"fleetcam store copy -media moves it from the directory to the bucket")
	}
	return nil
}

// hostURL reports whether u is an http:// or https:// URL of a host,
// without a path or a query.
func hostURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != "" && (p.Path == "" || p.Path == "/") && p.RawQuery == ""
}

// validBucket reports whether b is an S3 bucket name.
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 || strings.HasPrefix(b, "-") || strings.HasPrefix(b, ".") || strings.HasSuffix(b, "-") || strings.HasSuffix(b, ".") {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validPrefix reports whether p is empty or words of letters, digits, '.',
// '_' and '-' separated by '/' (leading and trailing slashes aside).
func validPrefix(p string) bool {
	p = strings.Trim(p, "/")
	if p == "" {
		return true
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}
