package cloudapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Cluster tells the API about the fleetcam nodes serving it: the live
// nodes for GET /v2/cluster, and whether the others can be reached for
// GET /readyz. A fleetcam alone is a cluster of one node that always
// reaches the others.
type Cluster interface {
	// Nodes lists the live nodes and what each holds, ordered by node id;
	// ErrNodesUnreachable when the other nodes cannot be asked now.
	Nodes(ctx context.Context) ([]ClusterNode, error)
	// Reachable reports whether this node reaches the other nodes (NATS).
	Reachable() bool
}

// ClusterNode is one live node as GET /v2/cluster answers it.
type ClusterNode struct {
	NodeID string `json:"nodeId"`
	// Devices counts the devices connected to the node.
	Devices int `json:"devices"`
	// StartedAt is when the node's process started.
	StartedAt time.Time `json:"startedAt"`
}

// ErrNodesUnreachable is what Cluster.Nodes returns while the other nodes
// cannot be reached (NATS is down); answered with 503.
var ErrNodesUnreachable = errors.New("cloudapi: the other nodes of the cluster cannot be reached")

// clusterBody is the answer of GET /v2/cluster.
type clusterBody struct {
	Nodes []ClusterNode `json:"nodes"`
}

// partnerEditor follows partnerOnly and refuses partner users below the
// editor access level: only the partner's administrators see the
// cluster's shape.
func (s *Server) partnerEditor(c *gin.Context) {
	if principal(c).AccessLevel != store.AccessEditor {
		s.fail(c, forbidden("this operation is for partner users of the editor access level only"))
		return
	}
	c.Next()
}

// clusterNodes answers the live nodes of the cluster and the devices each holds.
func (s *Server) clusterNodes(c *gin.Context) error {
	nodes, err := s.cluster.Nodes(c.Request.Context())
	if err != nil {
		return err
	}
	if nodes == nil {
		nodes = []ClusterNode{}
	}
	return ok(c, clusterBody{Nodes: nodes})
}

// readyz answers 200 once every component has started, the store can be
// reached and, in a cluster, so can NATS; else 503 naming what is down,
// so that a load balancer sends the traffic to another node meanwhile.
func (s *Server) readyz(c *gin.Context) error {
	if !s.ready() {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "starting", "requestId": requestID(c)})
		return nil
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "storeUnavailable", "requestId": requestID(c)})
		return nil
	}
	if !s.cluster.Reachable() {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "natsUnavailable", "requestId": requestID(c)})
		return nil
	}
	return okBody(c, gin.H{"status": "ready", "requestId": requestID(c)})
}

// alone is the Cluster of an API given none: the one node, named by
// cluster.nodeId, with no broker to count its devices.
type alone struct {
	id      string
	started time.Time
}

func (a alone) Nodes(context.Context) ([]ClusterNode, error) {
	return []ClusterNode{{NodeID: a.id, StartedAt: a.started}}, nil
}

func (alone) Reachable() bool { return true }
