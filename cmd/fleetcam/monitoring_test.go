package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
)

// The monitoring files an operator loads (configs/monitoring): the Grafana
// dashboard and the Prometheus rules, whose unit tests promtool runs.
const (
	dashboardFile = "../../configs/monitoring/grafana-dashboard.json"
	rulesFile     = "../../configs/monitoring/alerts.yml"
)

// TestMonitoringNamesExportedMetrics runs fleetcam with a TLS listener, a
// connected dashcam, an event delivered as a webhook, a command and a
// retention run, so that every metric it has carries a series, and checks
// that each metric and label the dashboard and the rules name is one
// /metrics exports.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	t.Parallel()
	exprs := append(dashboardExprs(t), ruleExprs(t)...)
	recorded := recordingRules(t)

	certFile, keyFile := testCertificate(t)
	e := startEnv(t, withDevice("35693810000300", "Truck 30"),
		withConfig(func(c *configs.Config) {
			c.MQTT.TLSAddr, c.MQTT.TLSCert, c.MQTT.TLSKey = "127.0.0.1:0", certFile, keyFile
			c.Retention.Interval = 100 * time.Millisecond // runs again once the organization exists
		}),
		withWebhooks(func(base string) map[string]any {
			return map[string]any{"eventWebhookUrl": []string{base + "/events"}}
		}))
	e.connect(nil)
	e.waitOnline()
	if _, err := e.dev.Emit(context.Background(), devicesim.EventSpec{Type: "deceleration"}); err != nil {
		t.Fatal(err)
	}
	e.webhook("the event webhook", "event", func(map[string]any) bool { return true })
	if status, out := e.c.call("GET", "/v2/devices/"+e.imei+"/format-storage", e.tok, nil); status != http.StatusOK {
		t.Fatalf("format storage: %d %v", status, out)
	}
	var exported families
	eventually(t, "a retention run over the organization and a delivered webhook in /metrics", func() bool {
		exported = scrapeFamilies(t, e.c.base+"/metrics")
		return exported["fleetcam_retention_deleted_total"].labels["kind"] &&
			exported["fleetcam_webhook_deliveries_total"].labels["outcome"]
	})

	for _, x := range exprs {
		var labels []string
		for _, name := range metricNames(x.expr) {
			switch {
			case strings.Contains(name, ":"):
				if !recorded[name] {
					t.Errorf("%s: %s is no recording rule of %s", x.where, name, rulesFile)
				}
			case name == "up":
				// Prometheus's own series of every scrape.
			default:
				f, ok := exported.lookup(name)
				if !ok {
					t.Errorf("%s: fleetcam does not export %s (or this test does not make it record a series)", x.where, name)
					continue
				}
				for l := range f.labels {
					labels = append(labels, l)
				}
			}
		}
		for _, l := range labelNames(x.expr) {
			if l != "job" && l != "instance" && l != "le" && !slices.Contains(labels, l) {
				t.Errorf("%s: no metric of %q has the label %s", x.where, x.expr, l)
			}
		}
	}
}

// TestDashboardModel checks what Grafana needs of the dashboard and what an
// operator expects of it: a data source and job/instance variables every
// query follows, a unit on every panel, and a panel for each of the
// fleet's vital signs.
func TestDashboardModel(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, schemaVersion %d", d.UID, d.SchemaVersion)
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Type+":"+v.Name)
	}
	if !slices.Equal(vars, []string{"datasource:datasource", "query:job", "query:instance"}) {
		t.Errorf("variables %v, want the Prometheus data source, job and instance", vars)
	}
	selector := regexp.MustCompile(`\b(fleetcam_|process_|go_)\w+(\{[^}]*\})?`)
	shown := map[string]bool{}
	for _, p := range flatPanels(d.Panels) {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q reads data source %q, not the variable", p.Title, p.Datasource.UID)
		}
		if p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("panel %q has no unit", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			for _, m := range selector.FindAllStringSubmatch(q.Expr, -1) {
				if !strings.HasPrefix(m[2], `{job=~"$job", instance=~"$instance"`) {
					t.Errorf("panel %q: %s does not follow the job and instance variables", p.Title, m[0])
				}
			}
			for _, name := range metricNames(q.Expr) {
				shown[strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_total")] = true
			}
		}
	}
	for _, vital := range []string{
		"fleetcam_mqtt_devices_online", "fleetcam_mqtt_connects", "fleetcam_mqtt_ingest_messages",
		"fleetcam_store_commit_seconds", "fleetcam_store_commit_batch_jobs", "fleetcam_store_disk_free_bytes",
		"fleetcam_webhook_queue_depth", "fleetcam_webhook_oldest_pending_age_seconds", "fleetcam_webhook_deliveries",
		"fleetcam_http_request_duration_seconds", "fleetcam_retention_runs",
		"fleetcam_mqtt_tls_certificate_expiry_timestamp_seconds",
	} {
		if !shown[vital] {
			t.Errorf("the dashboard does not show %s", vital)
		}
	}
}

// dashboardPanel is what the tests read of a Grafana panel; rows nest theirs.
type dashboardPanel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// flatPanels returns the panels that show data, out of their rows.
func flatPanels(ps []dashboardPanel) []dashboardPanel {
	var out []dashboardPanel
	for _, p := range ps {
		if p.Type == "row" {
			out = append(out, flatPanels(p.Panels)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// promExpr is a PromQL expression and where it is written.
type promExpr struct{ where, expr string }

// dashboardExprs are the dashboard's queries, its variables' included.
func dashboardExprs(t *testing.T) []promExpr {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []promExpr
	for _, p := range flatPanels(d.Panels) {
		for _, q := range p.Targets {
			out = append(out, promExpr{"dashboard panel " + p.Title, q.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			out = append(out, promExpr{"dashboard variable " + v.Name, v.Definition})
		}
	}
	return out
}

// ruleFile is what the tests read of a Prometheus rule file.
type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return f
}

// ruleExprs are the expressions of the recording and alerting rules.
func ruleExprs(t *testing.T) []promExpr {
	var out []promExpr
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			out = append(out, promExpr{"rule " + r.Record + r.Alert, r.Expr})
		}
	}
	return out
}

// recordingRules are the names the rules record.
func recordingRules(t *testing.T) map[string]bool {
	names := map[string]bool{}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names[r.Record] = true
			}
		}
	}
	return names
}

var (
	promString     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promIdentifier = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:$])([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	promGrouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	promMatcher    = regexp.MustCompile(`([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)\s*"`)
)

// metricNames are the metric names an expression reads: ours (fleetcam_),
// the Go client's (process_, go_), recorded ones (with a colon) and up.
func metricNames(expr string) []string {
	expr = promString.ReplaceAllString(expr, `""`)
	var names []string
	for _, m := range promIdentifier.FindAllStringSubmatch(expr, -1) {
		n := m[1]
		if strings.HasPrefix(n, "fleetcam_") || strings.HasPrefix(n, "process_") || strings.HasPrefix(n, "go_") ||
			strings.Contains(n, ":") || n == "up" {
			names = append(names, n)
		}
	}
	return names
}

// labelNames are the label names an expression groups, joins or matches by.
func labelNames(expr string) []string {
	var names []string
	for _, m := range promMatcher.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	expr = promString.ReplaceAllString(expr, `""`)
	for _, m := range promGrouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				names = append(names, l)
			}
		}
	}
	return names
}

// family is one metric family of a scrape: its type and its label names.
type family struct {
	typ    string
	labels map[string]bool
}

// families are a scrape's metric families by name.
type families map[string]family

// lookup finds the family a series name belongs to: its own, or the
// histogram or summary whose _bucket, _sum or _count it is.
func (fs families) lookup(name string) (family, bool) {
	if f, ok := fs[name]; ok {
		return f, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		f, ok := fs[strings.TrimSuffix(name, suffix)]
		if ok && strings.HasSuffix(name, suffix) && (f.typ == "histogram" || f.typ == "summary" && suffix != "_bucket") {
			return f, true
		}
	}
	return family{}, false
}

var sampleLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?\s`)

// scrapeFamilies reads url in the Prometheus text format.
func scrapeFamilies(t *testing.T, url string) families {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	fs := families{}
	var current string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			current = name
			fs[name] = family{typ: typ, labels: map[string]bool{}}
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || current == "" {
			continue
		}
		f := fs[current]
		for _, l := range promMatcher.FindAllStringSubmatch(m[1], -1) {
			f.labels[l[1]] = true
		}
		fs[current] = f
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return fs
}

// testCertificate writes a self-signed certificate for 127.0.0.1 and its
// key in PEM files.
func testCertificate(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fleetcam test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
