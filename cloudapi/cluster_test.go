package cloudapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// fakeCluster is a Cluster whose nodes and NATS the test sets.
type fakeCluster struct {
	nodes     []ClusterNode
	reachable atomic.Bool
}

func (f *fakeCluster) Nodes(context.Context) ([]ClusterNode, error) {
	if !f.reachable.Load() {
		return nil, ErrNodesUnreachable
	}
	return f.nodes, nil
}

func (f *fakeCluster) Reachable() bool { return f.reachable.Load() }

func withCluster(c Cluster) envOption {
	return func(_ *configs.Config, d *Deps) { d.Cluster = c }
}

// TestClusterNodes: a partner editor reads the nodes and their devices;
// a partner viewer and an organization user are refused; while the other
// nodes cannot be reached the call answers 503.
func TestClusterNodes(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	f := &fakeCluster{nodes: []ClusterNode{{NodeID: "node-a", Devices: 3, StartedAt: started}, {NodeID: "node-b", Devices: 0, StartedAt: started}}}
	f.reachable.Store(true)
	e := newEnv(t, withCluster(f))
	r := e.do("GET", "/v2/cluster", e.partnerToken, nil)
	r.want(http.StatusOK)
	if r.str("data.nodes.0.nodeId") != "node-a" || r.num("data.nodes.0.devices") != 3 ||
		r.str("data.nodes.1.nodeId") != "node-b" || r.str("data.nodes.0.startedAt") != "2026-03-01T11:00:00Z" {
		t.Fatalf("GET /v2/cluster: %s", r.raw)
	}
	viewer := e.partnerUser("viewer@example.com", store.AccessViewer)
	e.do("GET", "/v2/cluster", viewer, nil).want(http.StatusForbidden)
	org := e.newOrg(e.partnerToken, "Northwind")
	e.do("GET", "/v2/cluster", e.orgUser(org.id, "driver@example.com", store.AccessEditor), nil).want(http.StatusForbidden)
	e.do("GET", "/v2/cluster", "", nil).want(http.StatusUnauthorized)

	f.reachable.Store(false)
	e.do("GET", "/v2/cluster", e.partnerToken, nil).want(http.StatusServiceUnavailable)
}

// TestReadyzNamesNATS: /readyz answers 503 natsUnavailable while the
// other nodes cannot be reached, and 200 again once they can.
func TestReadyzNamesNATS(t *testing.T) {
	t.Parallel()
	f := &fakeCluster{}
	e := newEnv(t, withCluster(f))
	r := e.do("GET", "/readyz", "", nil)
	r.want(http.StatusServiceUnavailable)
	if r.str("status") != "natsUnavailable" {
		t.Fatalf("readyz without NATS: %s", r.raw)
	}
	f.reachable.Store(true)
	if r := e.do("GET", "/readyz", "", nil); r.status != http.StatusOK || r.str("status") != "ready" {
		t.Fatalf("readyz with NATS: %d %s", r.status, r.raw)
	}
}

// TestClusterNodesAlone: without a cluster the API answers its one node.
func TestClusterNodesAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/v2/cluster", e.partnerToken, nil)
	r.want(http.StatusOK)
	if nodes, _ := r.body["data"].(map[string]any)["nodes"].([]any); len(nodes) != 1 {
		t.Fatalf("GET /v2/cluster alone: %s", r.raw)
	}
}
