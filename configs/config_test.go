package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
		{"live stream idle timeout", "media:\n  liveStreamIdleTimeout: 0s\n", nil, "media.liveStreamIdleTimeout"},
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
