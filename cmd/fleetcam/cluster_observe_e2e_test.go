package main

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// The cluster's observability and the devices of a dead node, shown with
// three nodes on one PostgreSQL database and one NATS server.

// readyStatus GETs /readyz of node m and returns the HTTP status and the
// status the body names.
func readyStatus(m *member) (int, string) {
	status, out := m.c.call("GET", "/readyz", "", nil)
	s, _ := out["status"].(string)
	return status, s
}

// TestClusterReadyz: a node is not ready while NATS is down, naming it,
// and ready again once NATS is back.
func TestClusterReadyz(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	if status, s := readyStatus(e.nodes[1]); status != http.StatusOK || s != "ready" {
		t.Fatalf("readyz with NATS up: %d %q", status, s)
	}
	e.nats.Stop()
	eventually(t, "readyz to answer 503 natsUnavailable", func() bool {
		status, s := readyStatus(e.nodes[1])
		return status == http.StatusServiceUnavailable && s == "natsUnavailable"
	})
	e.nats.Restart()
	eventually(t, "readyz to answer 200 once NATS is back", func() bool {
		status, s := readyStatus(e.nodes[1])
		return status == http.StatusOK && s == "ready"
	})
}

// TestClusterMetricsNodeLabel: every series of a node carries its node
// id: fleetcam_*, the Go and process collectors' and the metrics handler's.
func TestClusterMetricsNodeLabel(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	status, body := scrape(t, e.nodes[1].a.httpAddr.String())
	if status != http.StatusOK {
		t.Fatalf("scrape node-b: %d", status)
	}
	series := map[string]int{}
	for line := range strings.SplitSeq(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series[strings.SplitN(line, "_", 2)[0]]++
		if !strings.Contains(line, `node="node-b"`) {
			t.Errorf("a series of node-b without its node label: %s", line)
		}
	}
	for _, prefix := range []string{"fleetcam", "go", "process", "promhttp"} {
		if series[prefix] == 0 {
			t.Errorf("node-b has no %s_* series", prefix)
		}
	}
}

// clusterNodes GETs /v2/cluster through node m and returns the nodes it
// answers, by id, with their device counts.
func (e *clusterEnv) clusterNodes(m *member) map[string]int {
	e.t.Helper()
	status, out := m.c.call("GET", "/v2/cluster", e.tok, nil)
	if status != http.StatusOK {
		e.t.Fatalf("GET /v2/cluster through %s: %d %v", m.id, status, out)
	}
	nodes := map[string]int{}
	list, _ := dig(out, "data", "nodes").([]any)
	for _, n := range list {
		n := n.(map[string]any)
		if _, err := time.Parse(time.RFC3339, n["startedAt"].(string)); err != nil {
			e.t.Fatalf("startedAt of %v: %v", n, err)
		}
		nodes[n["nodeId"].(string)] = int(n["devices"].(float64))
	}
	return nodes
}

// TestClusterStatus: GET /v2/cluster through any node, and `fleetcam
// cluster status`, list the live nodes and the devices each holds; a
// stopped node drops out.
func TestClusterStatus(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810002000", "Truck 20")
	e.rawDevice(0, imei)
	eventually(t, "the device held by node-a", func() bool { return e.holder(imei) == "node-a" })
	got := e.clusterNodes(e.nodes[1])
	if len(got) != 3 || got["node-a"] != 1 || got["node-b"] != 0 || got["node-c"] != 0 {
		t.Fatalf("GET /v2/cluster through node-b: %v; want node-a 1, node-b 0, node-c 0", got)
	}
	var out bytes.Buffer
	// The command needs the NATS URL alone, none of a node's other settings.
	code := run(t.Context(), []string{"cluster", "status"}, env{"FLEETCAM_NATS_URL": e.nats.URL()}.get, &out, &out)
	table := regexp.MustCompile(`(?m)^node-a +1 +\S+Z\nnode-b +0 +\S+Z\nnode-c +0 +\S+Z\n3 nodes, 1 devices$`)
	if code != 0 || !table.MatchString(out.String()) {
		t.Fatalf("fleetcam cluster status: exit %d:\n%s", code, out.String())
	}
	e.nodes[2].stop()
	got = e.clusterNodes(e.nodes[0])
	if _, live := got["node-c"]; len(got) != 2 || live {
		t.Fatalf("GET /v2/cluster after node-c stopped: %v; want node-a and node-b", got)
	}
	if status, body := e.nodes[0].c.call("GET", "/v2/cluster", "", nil); status != http.StatusUnauthorized {
		t.Fatalf("GET /v2/cluster without a token: %d %v", status, body)
	}
}

// kill stops node m as a killed process would: its job locks, its life
// lock and its database pool go first, so nothing of the shutdown that
// follows reaches the store.
func (m *member) kill() {
	m.a.cluster.locks.Close()
	m.a.db.Close()
	m.stop()
}

// TestClusterDeadNodeDevices: a node killed without its shutdown leaves
// its device online in the store; another node marks it offline.
func TestClusterDeadNodeDevices(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810002100", "Truck 21")
	e.rawDevice(0, imei)
	eventually(t, "the device recorded online on node-a", func() bool {
		dl := e.storedConnection(imei)
		return strings.HasPrefix(dl.ConnectionID, "node-a/") && dl.Presence == store.PresenceOnline
	})
	other := e.addDevice("35693810002200", "Truck 22")
	e.rawDevice(1, other)
	eventually(t, "the other device recorded online on node-b", func() bool {
		return strings.HasPrefix(e.storedConnection(other).ConnectionID, "node-b/")
	})
	e.nodes[0].kill()
	e.nodes = e.nodes[1:]
	eventually(t, "node-a's device marked offline by another node", func() bool {
		dl := e.storedConnection(imei)
		return dl.Presence == store.PresenceOffline && dl.ConnectionID == ""
	})
	if dl := e.storedConnection(other); dl.Presence != store.PresenceOnline {
		t.Fatalf("node-b's device is %+v; a live node's devices stay online", dl)
	}
}

// TestClusterStatusCommandAlone: `fleetcam cluster status` without a NATS
// URL says the fleetcam runs alone.
func TestClusterStatusCommandAlone(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	code := run(t.Context(), []string{"cluster", "status"}, env{}.get, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "cluster.natsURL (FLEETCAM_NATS_URL) is not set") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"cluster", "nodes"}, env{}.get, &out, &out); code != 1 || !strings.Contains(out.String(), "fleetcam cluster status") {
		t.Fatalf("fleetcam cluster nodes: exit %d: %s", code, out.String())
	}
}

// TestClusterNodeIDTaken: a node started with the id of a live node
// refuses to start, naming cluster.nodeId, since that node holds the id's
// life lock; once the first has stopped, the id is free again. It is the
// one test of the package that does not run in parallel: it shortens
// lifeWait, which every node the other tests start in this process reads.
func TestClusterNodeIDTaken(t *testing.T) {
	e := startCluster(t, 1, nil)
	defer func(w time.Duration) { lifeWait = w }(lifeWait)
	lifeWait = time.Second
	a, err := startNodeApp(e.nodeConfig(0, nil))
	if err == nil {
		a.stop(5 * time.Second)
		t.Fatal("a second node-a started beside the first")
	}
	if !strings.Contains(err.Error(), "cluster.nodeId node-a: another live node holds this node id") {
		t.Fatalf("refused with %q; want cluster.nodeId named", err)
	}
	e.nodes[0].stop()
	lifeWait = 10 * time.Second
	a, err = startNodeApp(e.nodeConfig(0, nil))
	if err != nil {
		t.Fatalf("node-a after the first stopped: %v", err)
	}
	a.stop(5 * time.Second)
}
