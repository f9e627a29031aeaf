package broker

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/internal/testshared"
	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/pgtest"
	"github.com/fleetcam/fleetcam/store/postgres"
)

// childEnv names the store file a re-executed test binary serves as a broker.
const childEnv = "FLEETCAM_BROKER_CHILD_DB"

func TestMain(m *testing.M) {
	if where := os.Getenv(childEnv); where != "" {
		runChildBroker(where)
		return
	}
	testshared.Main(m, pgtest.StopShared)
}

// openStoreAt opens the store at where: a PostgreSQL URL, or the path of a
// bbolt file.
func openStoreAt(where string) (*store.DB, error) {
	if strings.HasPrefix(where, "postgres://") {
		return postgres.Open(context.Background(), where, postgres.Options{}, store.Options{})
	}
	return boltstore.Open(where, store.Options{})
}

// runChildBroker serves a broker on 127.0.0.1:0 over the store at where
// (openStoreAt) until the process is killed, after printing its address.
func runChildBroker(where string) {
	cfg := configs.Default()
	cfg.MQTT.Addr = "127.0.0.1:0"
	db, err := openStoreAt(where)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	srv, err := New(cfg, db, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("ADDR", srv.Addr())
	select {}
}

// TestKillLosesNoAcknowledgedMessage kills the broker process (SIGKILL)
// while devices publish, then checks that every message it acknowledged is
// in the store: a bbolt file, or a PostgreSQL database (whose server lives
// on).
func TestKillLosesNoAcknowledgedMessage(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { testKillLosesNoAcknowledgedMessage(t, filepath.Join(t.TempDir(), "fleetcam.db")) })
	t.Run("postgres", func(t *testing.T) { testKillLosesNoAcknowledgedMessage(t, pgtest.Database(t, "")) })
}

func testKillLosesNoAcknowledgedMessage(t *testing.T, where string) {
	const devices = 4
	db, err := openStoreAt(where)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, devices)
	err = db.Update(t.Context(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("P")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "O", nil)
		if err != nil {
			return err
		}
		for i := range ids {
			ids[i] = imei(500 + i)
			if err := tx.AddDevice(&store.Device{IMEI: ids[i], OrganizationID: o.ID, PartnerID: p.ID}); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+where)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		t.Fatalf("child broker: %q %v", line, err)
	}

	master, _ := hex.DecodeString(configs.Default().Devices.FactoryMasterKey)
	var (
		mu    sync.Mutex
		acked = map[string][]int64{}
		total int
		wg    sync.WaitGroup
	)
	// Ended once the broker is dead: a publish in flight then would wait
	// for paho's packet timeout, 10 s, for an acknowledgement that cannot
	// come.
	publishing, stopPublishing := context.WithCancel(context.Background())
	defer stopPublishing()
	start := time.Now().UnixMilli()
	for _, id := range ids {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c := paho.NewClient(paho.ClientConfig{Conn: conn})
		recvMax := uint16(8)
		if _, err := c.Connect(ctxT(t), &paho.Connect{ClientID: id, Username: id, UsernameFlag: true, KeepAlive: 30, CleanStart: true,
			Password: []byte(protocol.BootstrapPassword(protocol.FactoryKey(master, id), id, time.Now())), PasswordFlag: true,
			Properties: &paho.ConnectProperties{ReceiveMaximum: &recvMax}}); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(id string, c *paho.Client) {
			defer wg.Done()
			for n := int64(0); ; n++ {
				ms := start + n
				b := protocol.GPSBatch{Samples: []protocol.GPSSample{{Time: ms, Lat: 52, Lon: 4}}}
				// A busy machine may take seconds to acknowledge.
				ctx, cancel := context.WithTimeout(publishing, time.Minute)
				pr, err := c.Publish(ctx, pahoPublish(protocol.Topic(id, protocol.TopicGPS), b))
				cancel()
				if err != nil || pr.ReasonCode != 0 {
					return // the broker is gone
				}
				mu.Lock()
				acked[id] = append(acked[id], ms)
				total++
				mu.Unlock()
			}
		}(id, c)
	}
	waitFor(t, "messages acknowledged under load", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return total >= 200
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	stopPublishing()
	wg.Wait()

	if db, err = openStoreAt(where); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(t.Context(), func(tx *store.Tx) error {
		for _, id := range ids {
			pts, err := tx.GPS(id, time.UnixMilli(start), time.UnixMilli(start+1<<30), 0)
			if err != nil {
				return err
			}
			stored := map[int64]bool{}
			for _, p := range pts {
				stored[p.Time.UnixMilli()] = true
			}
			for _, ms := range acked[id] {
				if !stored[ms] {
					return fmt.Errorf("device %s: acknowledged sample %d lost", id, ms)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged messages all stored after SIGKILL", total)
}
