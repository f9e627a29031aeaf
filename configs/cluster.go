package configs

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// Cluster joins this process to other fleetcam nodes that share one
// PostgreSQL database, with NATS between them (docs/cluster.md). A node is
// in cluster mode when NATSURL is set; without it fleetcam runs alone, as
// it always did, and nothing here is used.
type Cluster struct {
	// NATSURL names the NATS server, or several separated by commas
	// (nats://host:4222, tls://host:4222); empty: a single node.
	NATSURL string `yaml:"natsURL"`
	// NodeID names this node to the others: it is part of every device
	// connection id the node records and of the NATS subjects it answers,
	// so each node needs its own. Empty: the host name, with every
	// character other than a letter, digit, '-' or '_' turned into '-'.
	NodeID string `yaml:"nodeId"`
	// JobLockRetry is how often a node tries to take a singleton job (the
	// retention purge, offline alarms, alarm and event e-mail, webhook delivery)
	// that another node runs, and checks that the connection holding its
	// own job locks is alive.
	JobLockRetry time.Duration `yaml:"jobLockRetry"`
}

// Enabled reports whether this node is in cluster mode.
func (c Cluster) Enabled() bool { return c.NATSURL != "" }

// nodeIDPattern is what a node id may hold: one NATS subject token that
// also reads well in a connection id and a log line.
var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// DefaultNodeID turns a host name into a node id: characters a node id may
// not hold become '-', and the result is cut to 64 characters.
func DefaultNodeID(host string) string {
	b := []byte(host)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// fillNodeID gives a node in cluster mode without a node id its host's.
func (c *Cluster) fillNodeID() error {
	if !c.Enabled() || c.NodeID != "" {
		return nil
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return fmt.Errorf("config: cluster.nodeId (FLEETCAM_NODE_ID) is empty and the host name cannot be read (%v): set it", err)
	}
	c.NodeID = DefaultNodeID(host)
	return nil
}

// checkCluster reports the first cluster setting that is out of range, or
// a setting cluster mode needs that is missing, by name.
func (c *Config) checkCluster() error {
	cl := c.Cluster
	if cl.JobLockRetry < 100*time.Millisecond || cl.JobLockRetry > 10*time.Minute {
		return fmt.Errorf("config: cluster.jobLockRetry must be from 100ms to 10m")
	}
	if !cl.Enabled() {
		return nil
	}
	switch {
	case !natsURLs(cl.NATSURL):
		return errNATSURL
	case !nodeIDPattern.MatchString(cl.NodeID):
		return fmt.Errorf("config: cluster.nodeId must be 1 to 64 letters, digits, '-' or '_' (got %q)", cl.NodeID)
	case c.Store.PostgresURL == "":
		return fmt.Errorf("config: cluster.natsURL (FLEETCAM_NATS_URL) needs store.postgresURL (FLEETCAM_POSTGRES_URL): the nodes of a cluster share one PostgreSQL database")
	case c.Media.Dir == "" && !c.Media.S3.Enabled():
		return fmt.Errorf("config: cluster.natsURL (FLEETCAM_NATS_URL) needs media storage every node shares: a bucket (media.s3.endpoint and media.s3.bucket, FLEETCAM_MEDIA_S3_ENDPOINT and FLEETCAM_MEDIA_S3_BUCKET) " +
			"or a directory on a network file system (media.dir, FLEETCAM_MEDIA_DIR); a media directory in each node's data directory would hold only the files that node received")
	case c.Auth.SigningKey == "":
		return fmt.Errorf("config: cluster.natsURL (FLEETCAM_NATS_URL) needs auth.signingKey (FLEETCAM_SIGNING_KEY), the same on every node: a key generated in each node's data directory would differ")
	}
	return nil
}

// LoadClusterClient builds the configuration as Load does for a client of
// the cluster's NATS that is no node (`fleetcam cluster status`): it checks
// cluster.natsURL alone, when set, and none of what a node needs (the
// store, shared media, the signing key).
func LoadClusterClient(path string, getenv func(string) string) (Config, error) {
	cfg, err := read(path, getenv)
	if err == nil && cfg.Cluster.Enabled() && !natsURLs(cfg.Cluster.NATSURL) {
		err = errNATSURL
	}
	return cfg, err
}

// errNATSURL names the form of cluster.natsURL.
var errNATSURL = errors.New("config: cluster.natsURL must be nats:// or tls:// URLs with a host, separated by commas, e.g. nats://nats.internal:4222")

// natsURLs reports whether s lists NATS server URLs, separated by commas.
func natsURLs(s string) bool {
	for _, one := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
			return false
		}
	}
	return true
}
