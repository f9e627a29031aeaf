package configs

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The shipped file documents every setting with its default: loading it must
// give exactly Default().
func TestShippedFileMatchesDefaults(t *testing.T) {
	got, err := Load("fleetcam.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Fatalf("fleetcam.yaml differs from Default():\n got %+v\nwant %+v", got, want)
	}
}

// Every environment variable is named in the shipped file.
func TestShippedFileNamesEveryVariable(t *testing.T) {
	raw, err := os.ReadFile("fleetcam.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	for _, e := range c.envTable() {
		if !strings.Contains(string(raw), e.name) {
			t.Errorf("fleetcam.yaml does not mention %s", e.name)
		}
	}
}

func TestPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("cloud: eu\nhttp:\n  addr: \":9000\"\n"), 0o600)
	env := map[string]string{"FLEETCAM_HTTP_ADDR": "127.0.0.1:9100", "FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true"}
	c, err := Load(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Cloud != "eu" || c.HTTP.Addr != "127.0.0.1:9100" || !c.Webhooks.AllowPrivateTargets || c.MQTT.Addr != Default().MQTT.Addr {
		t.Fatalf("unexpected %+v", c)
	}
}

func TestInvalidSettingsNameTheSetting(t *testing.T) {
	tests := []struct {
		name, yaml string
		env        map[string]string
		want       string
	}{
		{"bad log level", "logLevel: loud\n", nil, "logLevel"},
		{"bad http addr", "", map[string]string{"FLEETCAM_HTTP_ADDR": "nonsense"}, "http.addr"},
		{"unknown key", "htp:\n  addr: x\n", nil, "htp"},
		{"page size", "http:\n  defaultPageSize: 5000\n", nil, "http.defaultPageSize"},
		{"bool env", "", map[string]string{"FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "maybe"}, "FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS"},
		{"tls without cert", "mqtt:\n  tlsAddr: \":8883\"\n", nil, "mqtt.tlsCert"},
		{"proxy list of lists", "http:\n  trustedProxies: [[10.0.0.1]]\n", nil, "http.trustedProxies item must be a single value (got a list)"},
		{"proxy list as text", "http:\n  trustedProxies: 10.0.0.1\n", nil, "http.trustedProxies must be a list such as [a, b] (got 10.0.0.1)"},
		{"proxy not an address", "mqtt:\n  trustedProxies: [10.0.0.0/8, balancer]\n", nil, "mqtt.trustedProxies must list IP addresses or CIDR ranges"},
		{"retry age", "webhooks:\n  maxRetryAge: 1h\n", nil, "webhooks.maxRetryAge"},
		{"delivery log days", "retention:\n  webhookDeliveryDays: 0\n", nil, "retention.webhookDeliveryDays"},
		{"duration as a number", "http:\n  requestTimeout: 30\n", nil, "line 2: http.requestTimeout must be a duration such as 30s or 5m (got 30)"},
		{"duration typo", "mqtt:\n  commandTimeout: 10 s\n", nil, "mqtt.commandTimeout must be a duration such as 30s or 5m (got 10 s)"},
		{"number as text", "http:\n  maxPageSize: lots\n", nil, "http.maxPageSize must be a whole number (got lots)"},
		{"bool as text", "devices:\n  allowLegacyFirmware: sometimes\n", nil, "devices.allowLegacyFirmware must be true or false (got sometimes)"},
		{"section as a value", "smtp: off\n", nil, "smtp must be a mapping of settings"},
		{"unknown nested key", "http:\n  adr: x\n", nil, "unknown setting http.adr"},
		{"public url not a url", "publicURL: not a url\n", nil, "publicURL must be an absolute http or https URL"},
		{"public url ftp", "", map[string]string{"FLEETCAM_PUBLIC_URL": "ftp://x"}, "publicURL must be an absolute http or https URL"},
		{"public url without host", "publicURL: \"https://\"\n", nil, "publicURL must be an absolute http or https URL"},
		{"oauth token lifetime", "auth:\n  oauthTokenTTL: 48h\n", nil, "auth.oauthTokenTTL must be from 1m to 24h"},
		{"short signing key", "", map[string]string{"FLEETCAM_SIGNING_KEY": "short"}, "auth.signingKey must be at least 32 characters"},
		{"short partner password", "", map[string]string{"FLEETCAM_PARTNER_PASSWORD": "a"},
			"bootstrap.partnerPassword (FLEETCAM_PARTNER_PASSWORD) must be at least 8 characters long"},
		{"partner password without a capital", "", map[string]string{"FLEETCAM_PARTNER_PASSWORD": "guard-pass-123456"},
			"bootstrap.partnerPassword (FLEETCAM_PARTNER_PASSWORD) must contain an upper-case letter, a lower-case letter and a digit"},
		{"common partner password", "", map[string]string{"FLEETCAM_PARTNER_PASSWORD": "Passw0rd"},
			"bootstrap.partnerPassword (FLEETCAM_PARTNER_PASSWORD) is too common"},
		{"live stream idle timeout", "media:\n  liveStreamIdleTimeout: 0s\n", nil, "media.liveStreamIdleTimeout"},
		{"postgres url of another scheme", "", map[string]string{"FLEETCAM_POSTGRES_URL": "mysql://db/fleetcam"}, "store.postgresURL must be a postgres:// or postgresql:// URL"},
		{"postgres url without a host", "store:\n  postgresURL: postgres:///fleetcam\n", nil, "store.postgresURL must be a postgres://"},
		{"statement timeout", "store:\n  statementTimeout: 10ms\n", nil, "store.statementTimeout must be from 1s to 10m"},
		{"pool size", "store:\n  maxConns: 1\n", nil, "store.maxConns must be from 2 to 1000"},
		{"job lock retry", "cluster:\n  jobLockRetry: 1ms\n", nil, "cluster.jobLockRetry must be from 100ms to 10m"},
		{"s3 endpoint without scheme", "", map[string]string{"FLEETCAM_MEDIA_S3_ENDPOINT": "s3.example.com", "FLEETCAM_MEDIA_S3_BUCKET": "media"},
			"media.s3.endpoint (FLEETCAM_MEDIA_S3_ENDPOINT) must be an http:// or https:// URL"},
		{"s3 endpoint with a path", "media:\n  s3:\n    endpoint: https://s3.example.com/media\n    bucket: media\n", nil,
			"media.s3.endpoint (FLEETCAM_MEDIA_S3_ENDPOINT) must be an http:// or https:// URL of a host without a path"},
		{"s3 without bucket", "", map[string]string{"FLEETCAM_MEDIA_S3_ENDPOINT": "https://s3.example.com"}, "media.s3.bucket (FLEETCAM_MEDIA_S3_BUCKET) is required"},
		{"s3 bucket name", "", map[string]string{"FLEETCAM_MEDIA_S3_ENDPOINT": "https://s3.example.com", "FLEETCAM_MEDIA_S3_BUCKET": "Media_Files"},
			"media.s3.bucket must be 3 to 63 lower-case letters"},
		{"s3 prefix", "media:\n  s3:\n    endpoint: https://s3.example.com\n    bucket: media\n    prefix: a/../b\n", nil, "media.s3.prefix must be words"},
		{"s3 half the keys", "", map[string]string{"FLEETCAM_MEDIA_S3_ENDPOINT": "https://s3.example.com", "FLEETCAM_MEDIA_S3_BUCKET": "media",
			"FLEETCAM_MEDIA_S3_ACCESS_KEY": "AKIA"}, "media.s3.accessKey and media.s3.secretKey"},
		{"s3 part size", "media:\n  s3:\n    endpoint: https://s3.example.com\n    bucket: media\n    partSizeMB: 1\n", nil, "media.s3.partSizeMB must be from 5"},
		{"s3 and a directory", "", map[string]string{"FLEETCAM_MEDIA_S3_ENDPOINT": "https://s3.example.com", "FLEETCAM_MEDIA_S3_BUCKET": "media",
			"FLEETCAM_MEDIA_DIR": "/mnt/media"}, "media.dir (FLEETCAM_MEDIA_DIR) and media.s3.endpoint (FLEETCAM_MEDIA_S3_ENDPOINT) are both set"},
		{"s3 path style", "", map[string]string{"FLEETCAM_MEDIA_S3_PATH_STYLE": "yes"}, "FLEETCAM_MEDIA_S3_PATH_STYLE"},
		{"s3 public endpoint without scheme", "", map[string]string{"FLEETCAM_MEDIA_S3_ENDPOINT": "http://seaweedfs.internal:8333",
			"FLEETCAM_MEDIA_S3_BUCKET": "media", "FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT": "media.example.com"},
			`media.s3.publicEndpoint (FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT) must be an http:// or https:// URL of a host without a path, e.g. https://media.example.com (got "media.example.com")`},
		{"s3 public endpoint with a path", "media:\n  s3:\n    endpoint: http://seaweedfs.internal:8333\n    bucket: media\n    publicEndpoint: https://example.com/media\n", nil,
			`media.s3.publicEndpoint (FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT) must be an http:// or https:// URL of a host without a path, e.g. https://media.example.com (got "https://example.com/media")`},
		{"s3 public endpoint and proxy", "", map[string]string{"FLEETCAM_MEDIA_S3_ENDPOINT": "http://seaweedfs.internal:8333",
			"FLEETCAM_MEDIA_S3_BUCKET": "media", "FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT": "https://media.example.com", "FLEETCAM_MEDIA_S3_PROXY": "true"},
			"media.s3.publicEndpoint (FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT) names the store's address in download links, and media.s3.proxy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			os.WriteFile(path, []byte(tc.yaml), 0o600)
			_, err := Load(path, func(k string) string { return tc.env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// Settings that are valid in form load, the public URL included.
func TestValidFormsLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("publicURL: https://fleet.example.com\nhttp:\n  requestTimeout: 45s\n  rateLimit: 2.5\nsmtp:\n"), 0o600)
	env := map[string]string{"FLEETCAM_PARTNER_PASSWORD": "Guard-pass-123456",
		"FLEETCAM_POSTGRES_URL": "postgres://fleetcam@db.example:5432/fleetcam?sslmode=require"}
	c, err := Load(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.PublicURL != "https://fleet.example.com" || c.HTTP.RequestTimeout != 45*time.Second || c.HTTP.RateLimit != 2.5 ||
		c.Store.PostgresURL != env["FLEETCAM_POSTGRES_URL"] {
		t.Fatalf("unexpected %+v", c)
	}
}

// Cluster mode: the node id defaults to the host's, and a node refuses to
// start without what every node of a cluster shares. Loading checks the
// settings only: no server behind the addresses is reached.
func TestClusterSettings(t *testing.T) {
	const pg = "postgres://fleetcam@db.example:5432/fleetcam"
	const media = "/mnt/fleetcam-media"
	key := strings.Repeat("k", 32)
	tests := []struct {
		name string
		env  map[string]string
		want string // part of the error; empty: loads
	}{
		{"alone", map[string]string{}, ""},
		{"cluster", map[string]string{"FLEETCAM_NATS_URL": "nats://nats.example:4222", "FLEETCAM_POSTGRES_URL": pg,
			"FLEETCAM_SIGNING_KEY": key, "FLEETCAM_NODE_ID": "node-a", "FLEETCAM_MEDIA_DIR": media}, ""},
		{"several servers", map[string]string{"FLEETCAM_NATS_URL": "nats://a:4222, tls://b:4222", "FLEETCAM_POSTGRES_URL": pg,
			"FLEETCAM_SIGNING_KEY": key, "FLEETCAM_NODE_ID": "node-a", "FLEETCAM_MEDIA_DIR": media}, ""},
		{"without postgres", map[string]string{"FLEETCAM_NATS_URL": "nats://nats.example:4222", "FLEETCAM_SIGNING_KEY": key,
			"FLEETCAM_MEDIA_DIR": media}, "cluster.natsURL (FLEETCAM_NATS_URL) needs store.postgresURL (FLEETCAM_POSTGRES_URL)"},
		{"without shared media", map[string]string{"FLEETCAM_NATS_URL": "nats://nats.example:4222", "FLEETCAM_POSTGRES_URL": pg,
			"FLEETCAM_SIGNING_KEY": key}, "needs media storage every node shares: a bucket (media.s3.endpoint"},
		{"media in a bucket", map[string]string{"FLEETCAM_NATS_URL": "nats://nats.example:4222", "FLEETCAM_POSTGRES_URL": pg,
			"FLEETCAM_SIGNING_KEY": key, "FLEETCAM_NODE_ID": "node-a", "FLEETCAM_MEDIA_S3_ENDPOINT": "https://s3.example.com",
			"FLEETCAM_MEDIA_S3_BUCKET": "fleet-media"}, ""},
		{"without signing key", map[string]string{"FLEETCAM_NATS_URL": "nats://nats.example:4222", "FLEETCAM_POSTGRES_URL": pg,
			"FLEETCAM_MEDIA_DIR": media}, "needs auth.signingKey (FLEETCAM_SIGNING_KEY)"},
		{"not a nats url", map[string]string{"FLEETCAM_NATS_URL": "http://nats.example:4222", "FLEETCAM_POSTGRES_URL": pg,
			"FLEETCAM_SIGNING_KEY": key, "FLEETCAM_MEDIA_DIR": media}, "cluster.natsURL must be nats:// or tls:// URLs"},
		{"node id with a dot", map[string]string{"FLEETCAM_NATS_URL": "nats://nats.example:4222", "FLEETCAM_POSTGRES_URL": pg,
			"FLEETCAM_SIGNING_KEY": key, "FLEETCAM_NODE_ID": "node.a", "FLEETCAM_MEDIA_DIR": media}, `cluster.nodeId must be 1 to 64 letters, digits, '-' or '_' (got "node.a")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load("", func(k string) string { return tc.env[k] })
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %s", err, tc.want)
			case tc.want == "" && c.Cluster.NodeID != tc.env["FLEETCAM_NODE_ID"]:
				t.Fatalf("node id %q", c.Cluster.NodeID)
			}
		})
	}
	t.Run("node id from the host name", func(t *testing.T) {
		env := map[string]string{"FLEETCAM_NATS_URL": "nats://nats.example:4222", "FLEETCAM_POSTGRES_URL": pg, "FLEETCAM_SIGNING_KEY": key,
			"FLEETCAM_MEDIA_DIR": media}
		c, err := Load("", func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		if c.Cluster.NodeID == "" || c.Cluster.NodeID != DefaultNodeID(host) {
			t.Fatalf("node id %q for host %q", c.Cluster.NodeID, host)
		}
	})
	t.Run("host names become node ids", func(t *testing.T) {
		if got := DefaultNodeID("fleet-1.eu.example.com"); got != "fleet-1-eu-example-com" {
			t.Fatalf("got %q", got)
		}
		if got := DefaultNodeID(strings.Repeat("a", 80)); len(got) != 64 {
			t.Fatalf("got %d characters", len(got))
		}
	})
}

// TestClusterClientSettings: a client of the cluster's NATS (fleetcam
// cluster status) needs cluster.natsURL alone, in its form; a node's other
// settings are neither required nor checked.
func TestClusterClientSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // part of the error; empty: loads
	}{
		{"nats url alone", map[string]string{"FLEETCAM_NATS_URL": "nats://a:4222,tls://b:4222"}, ""},
		{"alone", map[string]string{}, ""},
		{"not a nats url", map[string]string{"FLEETCAM_NATS_URL": "http://nats.example:4222"}, "cluster.natsURL must be nats:// or tls:// URLs"},
		{"a node's setting out of range", map[string]string{"FLEETCAM_NATS_URL": "nats://a:4222", "FLEETCAM_HTTP_ADDR": "nowhere"}, ""},
		{"a bad environment value", map[string]string{"FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "maybe"}, "FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadClusterClient("", func(k string) string { return tc.env[k] })
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %s", err, tc.want)
			case tc.want == "" && c.Cluster.NATSURL != tc.env["FLEETCAM_NATS_URL"]:
				t.Fatalf("natsURL %q", c.Cluster.NATSURL)
			}
		})
	}
}

// TestMediaS3Keys: the S3 keys come from the file or FLEETCAM_MEDIA_S3_*,
// else from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; the public
// endpoint from FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT.
func TestMediaS3Keys(t *testing.T) {
	base := map[string]string{"FLEETCAM_MEDIA_S3_ENDPOINT": "http://127.0.0.1:8333", "FLEETCAM_MEDIA_S3_BUCKET": "fleet-media",
		"FLEETCAM_MEDIA_S3_PATH_STYLE": "true", "AWS_ACCESS_KEY_ID": "aws-id", "AWS_SECRET_ACCESS_KEY": "aws-secret"}
	tests := []struct {
		name                string
		env                 map[string]string
		wantKey, wantSecret string
		wantPublic          string
	}{
		{"from the AWS variables", nil, "aws-id", "aws-secret", ""},
		{"fleetcam's first", map[string]string{"FLEETCAM_MEDIA_S3_ACCESS_KEY": "fc-id", "FLEETCAM_MEDIA_S3_SECRET_KEY": "fc-secret"}, "fc-id", "fc-secret", ""},
		{"a public endpoint", map[string]string{"FLEETCAM_MEDIA_S3_PUBLIC_ENDPOINT": "https://media.example.com"}, "aws-id", "aws-secret", "https://media.example.com"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := maps.Clone(base)
			maps.Copy(env, tc.env)
			c, err := Load("", func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			s := c.Media.S3
			if !s.Enabled() || !s.PathStyle || s.AccessKey != tc.wantKey || s.SecretKey != tc.wantSecret || s.PartSizeMB != 16 || s.PublicEndpoint != tc.wantPublic {
				t.Fatalf("got %+v", s)
			}
		})
	}
}

// TestListSettings: list settings load from YAML lists.
func TestListSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("http:\n  trustedProxies: [10.0.0.1]\nmqtt:\n  trustedProxies: [10.0.0.0/8, 192.0.2.7]\n"), 0o600)
	c, err := Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.HTTP.TrustedProxies, []string{"10.0.0.1"}) || !slices.Equal(c.MQTT.TrustedProxies, []string{"10.0.0.0/8", "192.0.2.7"}) {
		t.Fatalf("http %v, mqtt %v", c.HTTP.TrustedProxies, c.MQTT.TrustedProxies)
	}
}
