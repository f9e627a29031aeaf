package main

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/cloudapi/alarmmail/smtptest"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// The cluster's promises, each shown with three nodes on one PostgreSQL
// database and one NATS server (cluster_env_test.go).

// storedConnection is the device's connection as the store records it.
func (e *clusterEnv) storedConnection(imei string) store.DeviceLink {
	e.t.Helper()
	var dl store.DeviceLink
	err := e.nodes[0].a.db.View(e.t.Context(), func(tx *store.Tx) error {
		l, err := tx.DeviceLink(imei)
		if err == nil {
			dl = *l
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return dl
}

// TestClusterTakeover: a device whose old connection node A still holds
// connects to node B; A ends the old one with DISCONNECT 0x8E within a
// second, and the device is B's alone.
func TestClusterTakeover(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810001000", "Truck 10")
	old := e.rawDevice(0, imei)
	eventually(t, "the device recorded on node-a", func() bool {
		return strings.HasPrefix(e.storedConnection(imei).ConnectionID, "node-a/")
	})
	began := time.Now()
	e.rawDevice(1, imei)
	if code := disconnectedWith(old, patience); code != int(packets.ErrSessionTakenOver.Code) {
		t.Fatalf("node-a ended the old connection with %d; want DISCONNECT 0x8E", code)
	}
	t.Logf("node-a ended the old connection %s after the new one was accepted", time.Since(began).Round(time.Millisecond))
	eventually(t, "the device held by node-b alone", func() bool { return e.holder(imei) == "node-b" })
	if dl := e.storedConnection(imei); !strings.HasPrefix(dl.ConnectionID, "node-b/") || dl.Presence != store.PresenceOnline {
		t.Fatalf("the store records %+v; want node-b's connection, online", dl)
	}
}

// TestClusterRemoval: removing a device through node C ends its
// connection on node A with DISCONNECT 0x98.
func TestClusterRemoval(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810001100", "Truck 11")
	rc := e.rawDevice(0, imei)
	eventually(t, "the device held by node-a", func() bool { return e.holder(imei) == "node-a" })
	if status, out := e.nodes[2].c.call("DELETE", e.org+"/devices/"+imei, e.tok, nil); status != http.StatusOK {
		t.Fatalf("remove through node-c: %d %v", status, out)
	}
	if code := disconnectedWith(rc, patience); code != int(packets.ErrAdministrativeAction.Code) {
		t.Fatalf("node-a ended the removed device's connection with %d; want DISCONNECT 0x98", code)
	}
	eventually(t, "no node to hold the removed device", func() bool { return e.holder(imei) == "" })
}

// TestClusterCommands: commands through nodes B and C reach a device on
// node A and answer with its reply; a device connected nowhere is 417; while
// NATS is down, node B answers 503 for the device on node A while node A
// still reaches it, and B reaches it again once NATS is back.
func TestClusterCommands(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810001200", "Truck 12")
	absent := e.addDevice("35693810001300", "Truck 13")
	dev, _ := e.simulate(0, imei, stateDir(t))
	eventually(t, "the device connected to node-a", func() bool { return dev.Connected() && e.holder(imei) == "node-a" })

	status, out := e.nodes[1].c.call("GET", "/v2/devices/"+imei+"/format-storage", e.tok, nil)
	if status != http.StatusOK || dig(out, "data", "sdCard", "uuid") != dev.SDCard().UUID {
		t.Fatalf("format storage through node-b: %d %v; the device's card is %s", status, out, dev.SDCard().UUID)
	}
	status, out = e.nodes[2].c.call("GET", "/v2/devices/"+imei+"/recording-ranges", e.tok, nil)
	if status != http.StatusOK || dig(out, "data") == nil {
		t.Fatalf("recording ranges through node-c: %d %v", status, out)
	}
	status, out = e.nodes[1].c.call("GET", "/v2/devices/"+absent+"/format-storage", e.tok, nil)
	if status != http.StatusExpectationFailed || out["error"] != "ExpectationFailedError" {
		t.Fatalf("a device connected nowhere: %d %v; want 417", status, out)
	}

	e.nats.Stop()
	status, out = e.nodes[1].c.call("GET", "/v2/devices/"+imei+"/recording-ranges", e.tok, nil)
	if status != http.StatusServiceUnavailable || out["error"] != "ServiceUnavailableError" {
		t.Fatalf("through node-b while NATS is down: %d %v; want 503 ServiceUnavailableError", status, out)
	}
	if status, out := e.nodes[0].c.call("GET", "/v2/devices/"+imei+"/recording-ranges", e.tok, nil); status != http.StatusOK {
		t.Fatalf("through node-a, which holds the device, while NATS is down: %d %v", status, out)
	}
	// A change made through node-b while NATS is down is stored; its push
	// cannot go, and is made up for once NATS is back.
	if status, out := e.nodes[1].c.call("PUT", "/v2/devices/"+imei+"/device-config", e.tok, map[string]any{"brightness": map[string]any{"value": 55}}); status != http.StatusOK {
		t.Fatalf("device config through node-b while NATS is down: %d %v", status, out)
	}
	e.nats.Restart()
	eventually(t, "node-b to reach the device again once NATS is back", func() bool {
		status, _ := e.nodes[1].c.call("GET", "/v2/devices/"+imei+"/recording-ranges", e.tok, nil)
		return status == http.StatusOK
	})
	eventually(t, "the change made during the outage at the device", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && cfg.Device.Brightness == 55
	})
}

// TestClusterSettingsAndQueuedCommands: a configuration change made
// through node C reaches the device on node A at once; a privacy switch
// made through node C while the device is offline is queued, and sent by
// node B when the device connects there.
func TestClusterSettingsAndQueuedCommands(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	imei := e.addDevice("35693810001400", "Truck 14")
	dir := stateDir(t)
	dev, stop := e.simulate(0, imei, dir)
	eventually(t, "the device connected to node-a", func() bool { return dev.Connected() && e.holder(imei) == "node-a" })

	c := e.nodes[2].c
	if status, out := c.call("PUT", "/v2/devices/"+imei+"/device-config", e.tok, map[string]any{"brightness": map[string]any{"value": 77}}); status != http.StatusOK {
		t.Fatalf("device config through node-c: %d %v", status, out)
	}
	eventually(t, "the device on node-a to apply brightness 77", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && cfg.Device.Brightness == 77
	})

	stop()
	eventually(t, "the device offline", func() bool {
		_, out := c.call("GET", "/v2/devices/"+imei, e.tok, nil)
		return dig(out, "data", "connection", "status") == "offline"
	})
	status, out := c.call("POST", "/v2/devices/privacy-control", e.tok, map[string]any{"imeis": []string{imei}, "privacyMode": "on"})
	if accepted, _ := dig(out, "data", "accepted").([]any); status != http.StatusOK || len(accepted) != 1 {
		t.Fatalf("privacy switch through node-c while the device is offline: %d %v", status, out)
	}
	var queued []store.QueuedCommand
	e.nodes[0].a.db.View(t.Context(), func(tx *store.Tx) (err error) { queued, err = tx.QueuedCommands(imei); return err })
	if len(queued) != 1 {
		t.Fatalf("%d commands queued for the offline device; want the privacy switch", len(queued))
	}
	dev, _ = e.simulate(1, imei, dir)
	eventually(t, "privacy mode on at the device, now on node-b", func() bool {
		return dev.Connected() && e.holder(imei) == "node-b" && dev.PrivacyMode() == "on"
	})
	eventually(t, "the queued command answered", func() bool {
		e.nodes[0].a.db.View(t.Context(), func(tx *store.Tx) (err error) { queued, err = tx.QueuedCommands(imei); return err })
		return len(queued) == 0
	})

	// A driver added through node C reaches the device on node B in its
	// configuration; a check-out through node C, a queued command, is sent
	// by node B at once.
	orgQ := "?organizationId=" + strconv.FormatInt(e.orgID, 10)
	status, out = c.call("POST", "/v2/drivers"+orgQ, e.tok, map[string]any{"data": []map[string]any{
		{"organizationId": e.orgID, "driverThirdPartyId": "moshe123", "firstName": "Moshe"}}})
	if status != http.StatusCreated {
		t.Fatalf("create driver through node-c: %d %v", status, out)
	}
	pin := dig(out, "data").([]any)[0].(map[string]any)["driverCode"].(string)
	eventually(t, "the driver's PIN in the configuration of the device on node-b", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && len(cfg.Drivers) == 1 && cfg.Drivers[0].PinCode == pin
	})
	if _, err := dev.CheckIn(t.Context(), pin, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the driver checked in", func() bool {
		_, out := c.call("GET", "/v2/drivers"+orgQ, e.tok, nil)
		list, _ := dig(out, "data").([]any)
		return len(list) == 1 && list[0].(map[string]any)["imei"] == imei
	})
	status, out = c.call("POST", "/v2/devices/"+imei+"/driver-checkout", e.tok, nil)
	if status != http.StatusOK || dig(out, "data", "deviceNotified") != true {
		t.Fatalf("check-out through node-c: %d %v", status, out)
	}
	eventually(t, "the device on node-b to check the driver out", func() bool {
		_, checkedIn := dev.Driver()
		return !checkedIn
	})
}

// retentionRuns is how many retention purges node m has run.
func retentionRuns(t *testing.T, m *member) float64 {
	t.Helper()
	_, body := scrape(t, m.a.httpAddr.String())
	match := regexp.MustCompile(`(?m)^fleetcam_retention_runs_total\{node="` + m.id + `",result="ok"\} (\S+)$`).FindStringSubmatch(body)
	if match == nil {
		return 0
	}
	n, _ := strconv.ParseFloat(match[1], 64)
	return n
}

// purgers lists the nodes that ran retention purges since counts.
func purgers(t *testing.T, nodes []*member, since map[string]float64) []string {
	var out []string
	for _, m := range nodes {
		if retentionRuns(t, m) > since[m.id] {
			out = append(out, m.id)
		}
	}
	return out
}

// morePurges waits until one of nodes has run n more retention purges.
func morePurges(t *testing.T, nodes []*member, n float64) {
	t.Helper()
	start := map[string]float64{}
	for _, m := range nodes {
		start[m.id] = retentionRuns(t, m)
	}
	eventually(t, "more retention purges", func() bool {
		for _, m := range nodes {
			if retentionRuns(t, m) >= start[m.id]+n {
				return true
			}
		}
		return false
	})
}

// TestClusterSingletonJobs: the retention purge (like alarm and event mail, the
// offline alarm watch and webhook delivery) runs on exactly one of three
// nodes; once that node stops, another takes it over, and again only one.
func TestClusterSingletonJobs(t *testing.T) {
	t.Parallel()
	smtp := smtptest.Start(t) // alarm mail runs only with a server to send to
	e := startCluster(t, 3, func(c *configs.Config) {
		c.Retention.Interval = 50 * time.Millisecond
		c.SMTP.Addr = smtp.Addr()
		// The holder of a job lock checks its connection with a ping
		// bounded by the retry: on a busy machine a bound of 100 ms can
		// pass, and the job then moves although no node stopped.
		c.Cluster.JobLockRetry = 2 * time.Second
	})
	none := map[string]float64{}
	eventually(t, "a node to run the retention purge", func() bool { return len(purgers(t, e.nodes, none)) > 0 })
	// Ten purges later, and as many lock tries by the others, still one node.
	morePurges(t, e.nodes, 10)
	first := purgers(t, e.nodes, none)
	if len(first) != 1 {
		t.Fatalf("the retention purge ran on %v; want one node", first)
	}
	var locks int
	if err := pgQuery(t, e.pg, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'fleetcam job locks'
		AND a.datname = current_database()`, &locks); err != nil {
		t.Fatal(err)
	}
	if locks != 9 {
		t.Fatalf("%d job locks held; want one for each of the six jobs and each node's life lock", locks)
	}

	var rest []*member
	for _, m := range e.nodes {
		if m.id == first[0] {
			m.stop()
		} else {
			rest = append(rest, m)
		}
	}
	before := map[string]float64{}
	for _, m := range rest {
		before[m.id] = retentionRuns(t, m)
	}
	eventually(t, "another node to take the retention purge over", func() bool { return len(purgers(t, rest, before)) > 0 })
	morePurges(t, rest, 10)
	if second := purgers(t, rest, before); len(second) != 1 {
		t.Fatalf("after %s stopped the retention purge ran on %v; want one node", first[0], second)
	}
}

// TestClusterKeysMustMatch: a node whose factory master key is not the
// cluster's refuses to start, naming the key; with the same keys it joins.
func TestClusterKeysMustMatch(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 1, nil)
	cfg := e.nodeConfig(1, func(c *configs.Config) {
		c.Devices.FactoryMasterKey = strings.Repeat("ab", 32)
	})
	a, err := startNodeApp(cfg)
	if err == nil {
		a.stop(5 * time.Second)
		t.Fatal("a node with another factory master key started")
	}
	if !strings.Contains(err.Error(), "devices.factoryMasterKey is not the key node node-a started the cluster with") {
		t.Fatalf("refused with %q; want the key and the cluster's first node named", err)
	}
	e.startNode(1, nil)
}

// TestClusterTakeoverRace: a device connects to node A and node B at the
// same moment, several times over; each time exactly one connection
// survives, on the node whose connection the store recorded last.
func TestClusterTakeoverRace(t *testing.T) {
	t.Parallel()
	e := startCluster(t, 3, nil)
	for round := range 5 {
		imei := e.addDevice("3569381000150"+strconv.Itoa(round), "Truck 15")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { errs[i] = e.dialDevice(i, imei) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: connect to %s: %v", round, e.nodes[i].id, err)
			}
		}
		eventually(t, "one node to hold the device, the one the store names", func() bool {
			held := e.holder(imei)
			dl := e.storedConnection(imei)
			return (held == "node-a" || held == "node-b") && strings.HasPrefix(dl.ConnectionID, held+"/") &&
				dl.Presence == store.PresenceOnline
		})
	}
}
