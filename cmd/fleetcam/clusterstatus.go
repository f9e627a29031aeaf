package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetcam/fleetcam/broker/cluster"
	"github.com/fleetcam/fleetcam/configs"
)

// clusterStatusUsage is the one line of `fleetcam cluster`.
const clusterStatusUsage = "usage: fleetcam cluster status [-config FILE]"

// clusterCommand runs `fleetcam cluster status`: it asks every live node
// of the cluster, over the NATS of cluster.natsURL (FLEETCAM_NATS_URL),
// for its status and prints one line per node: what GET /v2/cluster
// answers, for an operator without an API token. It needs nothing of a
// node's configuration but cluster.natsURL (configs.LoadClusterClient).
func clusterCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "status" {
		return errors.New(clusterStatusUsage)
	}
	cfg, err := loadConfigWith(configs.LoadClusterClient, "cluster status", args[1:], getenv)
	if err != nil {
		return err
	}
	if !cfg.Cluster.Enabled() {
		return errors.New("cluster status: cluster.natsURL (FLEETCAM_NATS_URL) is not set: this fleetcam runs alone")
	}
	nc, err := nats.Connect(cfg.Cluster.NATSURL, nats.Name("fleetcam cluster status"), nats.Timeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("cluster status: cluster.natsURL: %w", err)
	}
	defer nc.Close()
	nodes, err := cluster.GatherStatus(ctx, nc, cluster.StatusWait)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tDEVICES\tSTARTED")
	total := 0
	for _, n := range nodes {
		total += n.Devices
		fmt.Fprintf(w, "%s\t%d\t%s\n", n.NodeID, n.Devices, n.StartedAt.UTC().Format(time.RFC3339))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%d nodes, %d devices\n", len(nodes), total)
	return err
}
