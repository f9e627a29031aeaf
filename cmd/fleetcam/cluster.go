package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/cluster"
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
}

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
	node, err := cluster.Connect(cluster.Options{URL: cfg.Cluster.NATSURL, NodeID: cfg.Cluster.NodeID, Broker: b,
		CommandTimeout: cfg.MQTT.CommandTimeout, Log: log})
	if err != nil {
		return nil, err
	}
	b.Cluster = node
	return &clusterNode{node: node, locks: locks}, nil
}

// close leaves the cluster; the broker and the jobs have stopped.
func (c *clusterNode) close() {
	c.node.Close()
	c.locks.Close()
}

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
