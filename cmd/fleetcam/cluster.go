package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/cluster"
	"github.com/fleetcam/fleetcam/cloudapi"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/postgres"
)

// Cluster mode (docs/cluster.md): what a node of a cluster runs beside
// what every fleetcam runs. A fleetcam without cluster.natsURL runs none
// of it.

// clusterNode is this process as one node of a cluster: its NATS side and
// the locks of the jobs that run on one node at a time.
type clusterNode struct {
	node  *cluster.Node
	locks *postgres.JobLocks
	// leave ends the hold on this node's life lock.
	leave context.CancelFunc
}

// lifeWait bounds how long a starting node waits for its life lock: long
// enough for the lock of a predecessor of the same id whose host vanished
// to go free (the lock connection's keepalive gives it up in about 25
// seconds), short enough to name a second live node of one id soon. A
// variable for the tests of that refusal.
var lifeWait = 40 * time.Second

// lifeLock is the job lock a node holds for its whole life: free means
// no live process of that node id reaches PostgreSQL.
func lifeLock(node string) string { return "node:" + node }

// keyLabel is what a key fingerprint is the HMAC of: fixed, so that the
// same key gives the same fingerprint on every node, and naming its use,
// so that the fingerprint is no HMAC fleetcam computes for anything else.
const keyLabel = "fleetcam cluster key fingerprint v1"

// keyFingerprint is HMAC-SHA256 of keyLabel under key: it tells two keys
// apart and reveals neither.
func keyFingerprint(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(keyLabel))
	return m.Sum(nil)
}

// checkClusterKeys refuses a node whose shared keys are not the
// cluster's: the API signing key (which also derives the media link key
// and the organizations' SSO secrets) and the factory master key. The
// first node records their fingerprints in PostgreSQL.
func checkClusterKeys(ctx context.Context, cfg configs.Config, db *store.DB, signingKey []byte) error {
	e, ok := db.Engine().(*postgres.Engine)
	if !ok {
		return errors.New("cluster mode needs the PostgreSQL store (store.postgresURL)")
	}
	master, err := hex.DecodeString(cfg.Devices.FactoryMasterKey)
	if err != nil {
		return fmt.Errorf("devices.factoryMasterKey must be hex: %w", err)
	}
	err = e.CheckClusterKeys(ctx, cfg.Cluster.NodeID, []postgres.KeyFingerprint{
		{Setting: "auth.signingKey", Sum: keyFingerprint(signingKey)},
		{Setting: "devices.factoryMasterKey", Sum: keyFingerprint(master)},
	})
	if errors.Is(err, postgres.ErrKeyDiffers) {
		return fmt.Errorf("cluster node %s: %w", cfg.Cluster.NodeID, err)
	}
	return err
}

// joinCluster connects this node to NATS as b's cluster; b must not have
// started yet.
func joinCluster(cfg configs.Config, b *broker.Server, log *slog.Logger) (*clusterNode, error) {
	locks, err := postgres.NewJobLocks(cfg.Store.PostgresURL, cfg.Cluster.JobLockRetry, log)
	if err != nil {
		return nil, err
	}
	// The life lock comes before any device can connect: a node sweeping
	// dead nodes' devices holds it while it marks them offline, so it
	// never marks a connection this node makes.
	life, leave := context.WithCancel(context.Background())
	taken := make(chan struct{})
	var once sync.Once
	go locks.Run(life, lifeLock(cfg.Cluster.NodeID), func(ctx context.Context) {
		first := false
		once.Do(func() { close(taken); first = true })
		if !first {
			restorePresence(ctx, b, cfg.Cluster.JobLockRetry, log)
		}
		<-ctx.Done()
	})
	select {
	case <-taken:
	case <-time.After(lifeWait):
		leave()
		locks.Close()
		return nil, fmt.Errorf("cluster.nodeId %s: another live node holds this node id, or PostgreSQL cannot be reached; every node needs its own id", cfg.Cluster.NodeID)
	}
	node, err := cluster.Connect(cluster.Options{URL: cfg.Cluster.NATSURL, NodeID: cfg.Cluster.NodeID, Broker: b,
		CommandTimeout: cfg.MQTT.CommandTimeout, Log: log})
	if err != nil {
		leave()
		locks.Close()
		return nil, err
	}
	b.Cluster = node
	return &clusterNode{node: node, locks: locks, leave: leave}, nil
}

// restorePresence runs when this node takes its life lock again after
// losing it (PostgreSQL was away, or its lock connection was): while the
// lock was free another node may have taken this one for dead and marked
// its devices offline, and the offline records of the devices that left
// meanwhile could not be written. It makes the store say again what this
// node's connections are, trying every retry until it could or ctx ends.
func restorePresence(ctx context.Context, b *broker.Server, retry time.Duration, log *slog.Logger) {
	for {
		n, err := b.RestorePresence(ctx)
		if err == nil {
			log.Info("life lock taken again: the presence of this node's devices restored", "restored", n, "devices", b.DevicesOnline())
			return
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("restore the presence of this node's devices; trying again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

// close leaves the cluster; the broker and the jobs have stopped.
func (c *clusterNode) close() {
	c.node.Close()
	c.leave()
	c.locks.Close()
}

// nodeGone tells whether a node is gone: no process of it answers on
// NATS (cluster.Node.Gone).
type nodeGone func(ctx context.Context, node string) (bool, error)

// sweepDeadNodes marks offline, every interval until ctx ends, the device
// links that claim a connection to a node that is gone: a node killed
// without its shutdown leaves its devices online in the store until they
// reconnect elsewhere. It runs as a job of one node at a time.
//
// A node is gone when both what PostgreSQL and what NATS know say so: it
// holds no life lock, and no process of it answers on NATS. The lock
// alone is not enough: every node loses it when PostgreSQL is away and
// takes it again up to a retry after PostgreSQL is back, so a node
// judging by the lock alone in that window would mark the devices of live
// nodes offline. While this node cannot reach NATS it marks nothing.
func sweepDeadNodes(ctx context.Context, db *store.DB, locks *postgres.JobLocks, gone nodeGone, self string, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		var nodes []string
		err := db.View(ctx, func(tx *store.Tx) (err error) { nodes, err = tx.ConnectedNodes(); return err })
		if err != nil && ctx.Err() == nil {
			log.Warn("read the nodes devices are connected to; trying again", "err", err)
		}
		for _, node := range nodes {
			if node == self {
				continue
			}
			if g, err := gone(ctx, node); !g {
				if err != nil && ctx.Err() == nil {
					log.Debug("cannot tell over NATS whether a node lives; its devices stay as they are", "node", node, "err", err)
				}
				continue
			}
			var marked int
			dead, err := locks.WhileFree(ctx, lifeLock(node), func() error {
				return db.Update(ctx, store.Actor{Source: "cluster"}, func(tx *store.Tx) (err error) {
					marked, err = tx.MarkOffline(tx.Now(), node+"/")
					return err
				})
			})
			switch {
			case err != nil:
				log.Warn("mark a dead node's devices offline; trying again", "node", node, "err", err)
			case dead:
				log.Info("a node answers on NATS no more and holds no life lock: its devices marked offline", "node", node, "devices", marked)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// nodesView is the API's view of the nodes (cloudapi.Cluster): the
// cluster's live nodes gathered over NATS, or this node alone.
type nodesView struct {
	node    *cluster.Node // nil alone
	b       *broker.Server
	id      string
	started time.Time
}

var _ cloudapi.Cluster = nodesView{}

// Nodes implements cloudapi.Cluster.
func (v nodesView) Nodes(ctx context.Context) ([]cloudapi.ClusterNode, error) {
	if v.node == nil {
		return []cloudapi.ClusterNode{{NodeID: v.id, Devices: v.b.DevicesOnline(), StartedAt: v.started}}, nil
	}
	st, err := v.node.Status(ctx)
	if errors.Is(err, cluster.ErrUnavailable) {
		return nil, cloudapi.ErrNodesUnreachable
	}
	if err != nil {
		return nil, err
	}
	nodes := make([]cloudapi.ClusterNode, len(st))
	for i, n := range st {
		nodes[i] = cloudapi.ClusterNode(n)
	}
	return nodes, nil
}

// Reachable implements cloudapi.Cluster.
func (v nodesView) Reachable() bool { return v.node == nil || v.node.Reachable() }

// job is background work that must run on one node of a cluster at a time.
type job struct {
	name string
	run  func(context.Context)
}

// runJobs runs each job until ctx ends: at once on a node alone, and
// while this node holds the job's lock on a node of a cluster.
func (a *app) runJobs(ctx context.Context, jobs []job) {
	for _, j := range jobs {
		a.background.Go(func() {
			if a.cluster == nil {
				j.run(ctx)
				return
			}
			a.cluster.locks.Run(ctx, j.name, j.run)
		})
	}
}

// nodeRelay is the cluster node as the API's Relay, with the node's errors
// translated into the ones the API declares.
type nodeRelay struct{ node *cluster.Node }

var _ cloudapi.Relay = nodeRelay{}

// relayErr translates an error of the cluster node.
func relayErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrNobody):
		return fmt.Errorf("%w: %w", cloudapi.ErrNobody, err)
	case errors.Is(err, cluster.ErrUnavailable):
		return fmt.Errorf("%w: %w", cloudapi.ErrDeviceUnreachable, err)
	case errors.Is(err, broker.ErrDeviceOffline):
		return fmt.Errorf("%w: %w", cloudapi.ErrDeviceOffline, err)
	}
	return err
}

// HandleHeld implements cloudapi.Relay.
func (r nodeRelay) HandleHeld(verb string, fn func(ctx context.Context, imei string, data []byte) ([]byte, error)) {
	r.node.HandleHeld(verb, fn)
}

// AskHolder implements cloudapi.Relay.
func (r nodeRelay) AskHolder(ctx context.Context, imei, verb string, data []byte) ([]byte, error) {
	out, err := r.node.AskHolder(ctx, imei, verb, data)
	return out, relayErr(err)
}

// Request implements cloudapi.Relay.
func (r nodeRelay) Request(ctx context.Context, subject string, data []byte) ([]byte, error) {
	out, err := r.node.Request(ctx, subject, data)
	return out, relayErr(err)
}

// Publish implements cloudapi.Relay.
func (r nodeRelay) Publish(subject string, data []byte) error {
	return relayErr(r.node.Publish(subject, data))
}

// Subscribe implements cloudapi.Relay.
func (r nodeRelay) Subscribe(subject string, fn func(subject string, data []byte) []byte) (func(), error) {
	stop, err := r.node.Subscribe(subject, fn)
	return stop, relayErr(err)
}
