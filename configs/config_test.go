package configs

import (
	"os"
	"path/filepath"
	"reflect"
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
		{"short signing key", "", map[string]string{"FLEETCAM_SIGNING_KEY": "short"}, "auth.signingKey must be at least 32 characters"},
		{"short partner password", "", map[string]string{"FLEETCAM_PARTNER_PASSWORD": "a"},
			"bootstrap.partnerPassword (FLEETCAM_PARTNER_PASSWORD) must be at least 8 characters long"},
		{"partner password without a capital", "", map[string]string{"FLEETCAM_PARTNER_PASSWORD": "guard-pass-123456"},
			"bootstrap.partnerPassword (FLEETCAM_PARTNER_PASSWORD) must contain an upper-case letter, a lower-case letter and a digit"},
		{"live stream idle timeout", "media:\n  liveStreamIdleTimeout: 0s\n", nil, "media.liveStreamIdleTimeout"},
		{"postgres url of another scheme", "", map[string]string{"FLEETCAM_POSTGRES_URL": "mysql://db/fleetcam"}, "store.postgresURL must be a postgres:// or postgresql:// URL"},
		{"postgres url without a host", "store:\n  postgresURL: postgres:///fleetcam\n", nil, "store.postgresURL must be a postgres://"},
		{"statement timeout", "store:\n  statementTimeout: 10ms\n", nil, "store.statementTimeout must be from 1s to 10m"},
		{"pool size", "store:\n  maxConns: 1\n", nil, "store.maxConns must be from 2 to 1000"},
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
