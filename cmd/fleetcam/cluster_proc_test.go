package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/broker/cluster/natstest"
	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
)

// The cluster of processes: fleetcam nodes running as child processes
// (the test binary itself, see TestMain), so that a test can kill one
// with SIGKILL, over one PostgreSQL database of the test binary's
// throwaway server and one NATS server in this process. Each node has its
// own data directory and listeners on loopback; they share the keys and
// the media storage.

// procCluster is a running cluster of fleetcam processes.
type procCluster struct {
	t     *testing.T
	pg    string
	nats  *natstest.Server
	setup procSetup
	nodes []*procNode
	tok   string // the partner's token, good on every node
	orgID int64
	org   string // the organization's API path
}

// procSetup is what every node of a procCluster is given besides the
// database, NATS and the settings of startNode.
type procSetup struct {
	// media is the environment that says where the nodes keep media: a
	// directory they share (sharedMediaDir) or a bucket (bucketEnv).
	media []string
	// config is YAML added to every node's configuration file: settings
	// that startNode's file does not hold.
	config string
}

// sharedMediaDir is the environment of nodes that keep media in the one
// directory dir.
func sharedMediaDir(dir string) []string { return []string{"FLEETCAM_MEDIA_DIR=" + dir} }

// bucketEnv is the environment of nodes that keep media in the bucket of o,
// with no media directory.
func bucketEnv(o blob.S3Options) []string {
	return []string{"FLEETCAM_MEDIA_S3_ENDPOINT=" + o.Endpoint, "FLEETCAM_MEDIA_S3_BUCKET=" + o.Bucket,
		"FLEETCAM_MEDIA_S3_REGION=" + o.Region, "FLEETCAM_MEDIA_S3_ACCESS_KEY=" + o.AccessKey,
		"FLEETCAM_MEDIA_S3_SECRET_KEY=" + o.SecretKey, "FLEETCAM_MEDIA_S3_PATH_STYLE=" + strconv.FormatBool(o.PathStyle)}
}

// procNode is one fleetcam process of a procCluster.
type procNode struct {
	id  string
	dir string // its data directory
	c   child
	api client

	mu   sync.Mutex
	jobs []string // the jobs whose lock the node logged taking, in order
	lost []string // the jobs whose lock the node logged losing, in order
}

// startProcCluster starts n fleetcam processes in cluster mode (node-a,
// node-b, …) that share a media directory, and creates the organization
// through the first.
func startProcCluster(t *testing.T, n int) *procCluster {
	t.Helper()
	return startProcClusterWith(t, n, procSetup{media: sharedMediaDir(t.TempDir())})
}

// startProcClusterWith starts n fleetcam processes as startProcCluster
// does, each given setup.
func startProcClusterWith(t *testing.T, n int, setup procSetup) *procCluster {
	t.Helper()
	retries := make([]time.Duration, n)
	for i := range retries {
		retries[i] = 200 * time.Millisecond
	}
	return startProcClusterOn(t, pgtest.Database(t, ""), retries, setup)
}

// startProcClusterOn starts a fleetcam process for each of retries, as
// startProcCluster does, over the database at pg, each with its
// cluster.jobLockRetry and given setup.
func startProcClusterOn(t *testing.T, pg string, retries []time.Duration, setup procSetup) *procCluster {
	t.Helper()
	pc := &procCluster{t: t, pg: pg, nats: natstest.Start(t), setup: setup}
	for i, retry := range retries {
		pc.nodes = append(pc.nodes, pc.startNode("node-"+string(rune('a'+i)), retry))
	}
	pc.tok = pc.nodes[0].api.login(partnerEmail, partnerPassword)
	status, out := pc.nodes[0].api.call("POST", "/v2/organizations", pc.tok, map[string]any{"name": "Northwind Haulage"})
	if status != http.StatusOK {
		t.Fatalf("create organization: %d %v", status, out)
	}
	pc.orgID = int64(dig(out, "data", "organizationId").(float64))
	pc.org = "/v2/organizations/" + strconv.FormatInt(pc.orgID, 10)
	return pc
}

// startNode starts one node with cluster.jobLockRetry retry, short so
// that a job moves to another node soon after a kill; every device
// connects from 127.0.0.1, so the per-address connect limit is lifted.
func (pc *procCluster) startNode(id string, retry time.Duration) *procNode {
	pc.t.Helper()
	dir := pc.t.TempDir()
	cfg := filepath.Join(dir, "fleetcam.yaml")
	err := os.WriteFile(cfg, []byte(`mqtt:
  connectRatePerIP: 1000000
  connectBurstPerIP: 1000000
  commandTimeout: 10s
auth:
  bcryptCost: 4
webhooks:
  initialBackoff: 100ms
  maxBackoff: 1s
cluster:
  jobLockRetry: `+retry.String()+`
store:
  maxConns: `+strconv.Itoa(testMaxConns)+`
`+pc.setup.config), 0o600)
	if err != nil {
		pc.t.Fatal(err)
	}
	pn := &procNode{id: id, dir: dir}
	env := append([]string{"FLEETCAM_POSTGRES_URL=" + pc.pg, "FLEETCAM_NATS_URL=" + pc.nats.URL(),
		"FLEETCAM_NODE_ID=" + id, "FLEETCAM_SIGNING_KEY=" + clusterSigningKey}, pc.setup.media...)
	pn.c = runChildLogged(pc.t, dir, cfg, pn.logged, env...)
	pn.api = client{t: pc.t, base: pn.c.base}
	return pn
}

// logged records the jobs the node takes, from its log.
func (pn *procNode) logged(line []byte) {
	if bytes.Contains(line, []byte(`"level":"ERROR"`)) || bytes.Contains(line, []byte(`"level":"WARN"`)) {
		if os.Getenv("FLEETCAM_TEST_LOG") != "" {
			os.Stderr.Write(append(line, 10))
		}
	}
	var m struct {
		Msg string `json:"msg"`
		Job string `json:"job"`
	}
	if json.Unmarshal(line, &m) != nil {
		return
	}
	switch m.Msg {
	case "job lock taken; running the job on this node":
		pn.mu.Lock()
		pn.jobs = append(pn.jobs, m.Job)
		pn.mu.Unlock()
	case "job lock connection lost; the job stops here and another node may take it":
		pn.mu.Lock()
		pn.lost = append(pn.lost, m.Job)
		pn.mu.Unlock()
	}
}

// lostLock reports how often the node logged losing job's lock.
func (pn *procNode) lostLock(job string) int {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	n := 0
	for _, j := range pn.lost {
		if j == job {
			n++
		}
	}
	return n
}

// took reports how often the node logged taking job's lock.
func (pn *procNode) took(job string) int {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	n := 0
	for _, j := range pn.jobs {
		if j == job {
			n++
		}
	}
	return n
}

// brokerURL is the node's MQTT address as a device holds it.
func (pn *procNode) brokerURL() string { return "tcp://" + pn.c.mqtt }

// kill ends the node with SIGKILL and waits for it.
func (pn *procNode) kill() {
	pn.c.cmd.Process.Kill()
	pn.c.cmd.Wait()
}

// dispatcher waits for the node that runs webhook delivery and returns it.
func (pc *procCluster) dispatcher() *procNode {
	pc.t.Helper()
	var held *procNode
	eventually(pc.t, "a node to take webhook delivery", func() bool {
		for _, pn := range pc.nodes {
			if pn.took("webhooks") > 0 {
				held = pn
			}
		}
		return held != nil
	})
	return held
}

// addDevices adds imeis to the organization, written straight into the
// store in one transaction: adding a thousand devices through the API one
// at a time would take most of the test's time.
func (pc *procCluster) addDevices(imeis []string) {
	pc.t.Helper()
	db, err := postgres.Open(pc.t.Context(), pc.pg, postgres.Options{}, store.Options{})
	if err != nil {
		pc.t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(pc.t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		o, err := tx.Organization(pc.orgID)
		if err != nil {
			return err
		}
		for _, imei := range imeis {
			if err := tx.AddDevice(&store.Device{IMEI: imei, Name: "Truck " + imei, OrganizationID: o.ID, PartnerID: o.PartnerID}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		pc.t.Fatal(err)
	}
}

// factoryMasterKey is the key every node shares (configuration default)
// that simulated devices bootstrap with.
func factoryMasterKey(t *testing.T) []byte {
	t.Helper()
	master, err := hex.DecodeString(configs.Default().Devices.FactoryMasterKey)
	if err != nil {
		t.Fatal(err)
	}
	return master
}

// hookReceiver is a partner's webhook endpoint for the cluster tests: it
// verifies every delivery's signature, checks that a message arriving
// again carries the webhook-id it first came with, and records, per
// device, the event ids it answered 2xx for, in the order it did. hold,
// when set, decides per request whether to keep it unanswered until
// released or the sender goes away.
type hookReceiver struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	secret   string
	ids      map[string]string  // body digest → webhook-id
	seen     map[string]int     // webhook-id → requests
	answered map[string]bool    // webhook-ids answered 2xx
	order    map[string][]int64 // serial number → event ids answered 2xx, in order
	events   map[string]bool    // "<serial number> <event time>" answered 2xx
	requests int
	bad      int
	mixed    int // messages that came again under another webhook-id
	hold     func(n int, id string) bool
	held     map[string]bool // webhook-ids of requests held when the sender went away
	release  chan struct{}
}

// startHookReceiver starts a receiver on loopback.
func startHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{t: t, ids: map[string]string{}, seen: map[string]int{}, answered: map[string]bool{},
		order: map[string][]int64{}, events: map[string]bool{}, held: map[string]bool{}, release: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.releaseHeld()
		r.srv.Close()
	})
	return r
}

// releaseHeld lets held requests be answered, once.
func (r *hookReceiver) releaseHeld() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.release:
	default:
		close(r.release)
	}
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get(webhooks.HeaderID)
	r.mu.Lock()
	if err := webhooks.Verify(r.secret, req.Header, body, time.Now(), 5*time.Minute); err != nil {
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	if prev, ok := r.ids[digest]; ok && prev != id {
		r.mixed++
	}
	r.ids[digest] = id
	r.requests++
	r.seen[id]++
	hold := r.hold != nil && r.hold(r.requests, id)
	r.mu.Unlock()
	if hold {
		select {
		case <-r.release:
		case <-req.Context().Done():
			r.mu.Lock()
			r.held[id] = true
			r.mu.Unlock()
			return
		}
	}
	var m struct {
		Type string `json:"type"`
		Data struct {
			ID           int64  `json:"id"`
			SerialNumber string `json:"serialNumber"`
			Time         int64  `json:"time"`
		} `json:"data"`
	}
	json.Unmarshal(body, &m)
	r.mu.Lock()
	if m.Type == "event" && !r.answered[id] {
		r.order[m.Data.SerialNumber] = append(r.order[m.Data.SerialNumber], m.Data.ID)
		r.events[m.Data.SerialNumber+" "+strconv.FormatInt(m.Data.Time, 10)] = true
	}
	r.answered[id] = true
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// subscribe points the organization's event webhook at the receiver,
// through pn.
func (r *hookReceiver) subscribe(pc *procCluster, pn *procNode) {
	r.t.Helper()
	status, out := pn.api.call("POST", pc.org+"/webhook-settings", pc.tok,
		map[string]any{"eventWebhookUrl": []string{r.srv.URL}, "allowInsecureWebhookUrls": true})
	secret, _ := dig(out, "data", "webhookSecret").(string)
	if status != http.StatusOK || secret == "" {
		r.t.Fatalf("webhook settings: %d %v", status, out)
	}
	r.mu.Lock()
	r.secret = secret
	r.mu.Unlock()
}

// deliveredAll reports whether the outbox is drained, every delivery in
// the store is delivered and the receiver answered every one of them
// 2xx; missing lists the stored webhook-ids it never answered.
func (r *hookReceiver) deliveredAll(pc *procCluster) (done bool, missing []string, why string) {
	var cursor, last int64
	var pending int
	err := pgQuery(r.t, pc.pg, `SELECT (SELECT cursor_seq FROM webhook_outbox),
		(SELECT coalesce(max(seq), 0) FROM messages),
		(SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered')`, &cursor, &last, &pending)
	switch {
	case err != nil:
		return false, nil, err.Error()
	case cursor < last || pending > 0:
		var statuses []string
		statuses, _ = pgStrings(r.t, pc.pg, `SELECT status || ' ' || count(*) FROM webhook_deliveries GROUP BY status ORDER BY status`)
		return false, nil, fmt.Sprintf("outbox cursor at message %d of %d; %d deliveries not delivered (by status: %v)", cursor, last, pending, statuses)
	}
	ids, err := pgStrings(r.t, pc.pg, `SELECT webhook_id FROM webhook_deliveries`)
	if err != nil {
		return false, nil, err.Error()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if !r.answered[id] {
			missing = append(missing, id)
		}
	}
	return len(missing) == 0, missing, fmt.Sprintf("%d of %d stored deliveries not answered", len(missing), len(ids))
}

// pgStrings runs a query of one text column on the database at url.
func pgStrings(t *testing.T, url, query string) ([]string, error) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), query)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
