package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/internal/testshared"
	"github.com/fleetcam/fleetcam/store/blob/s3test"
	"github.com/fleetcam/fleetcam/store/pgtest"
)

// childProgram is fleetcam as go build makes it, which the tests run as a
// child process so that they can kill it with SIGKILL: the program as it
// is deployed, without the race detector. The race detector finds the
// races of the same code in the tests that run it in their own process,
// and would multiply what the children's work costs.
var childProgram = testshared.Build("github.com/fleetcam/fleetcam/cmd/fleetcam")

// crashEnv makes the test binary run fleetcam itself (see TestMain) and
// kill itself right after committing a change that queues a device command
// (commandCommitted), a hook that only a test binary has.
const crashEnv = "FLEETCAM_TEST_CRASH_AFTER_COMMAND_COMMIT"

func TestMain(m *testing.M) {
	if os.Getenv(crashEnv) != "" {
		commandCommitted = func() {
			self, _ := os.FindProcess(os.Getpid())
			self.Kill()
			select {}
		}
		os.Exit(runMain(nil))
	}
	// Most of this package's tests wait on child processes, process
	// clusters and outages far more than they use a core: make test runs
	// more of them at once (FLEETCAM_E2E_PARALLEL, the Makefile's
	// TESTE2EPARALLEL) than the -parallel it gives every package.
	if n := os.Getenv("FLEETCAM_E2E_PARALLEL"); n != "" {
		flag.Parse()
		if err := flag.Set("test.parallel", n); err != nil {
			fmt.Fprintf(os.Stderr, "FLEETCAM_E2E_PARALLEL=%q: want how many tests run at once, a positive number (%v)\n", n, err)
			os.Exit(2)
		}
	}
	// The end-to-end tests on PostgreSQL and the tests of media in a
	// bucket start the servers; the tests of child processes build
	// fleetcam.
	testshared.Main(m, pgtest.StopShared, s3test.StopShared, childProgram.Stop)
}

// startChild runs fleetcam in a child process over dir and returns it with
// its HTTP base URL, read from its start-up log line.
func startChild(t *testing.T, dir, receiverURL string) (*exec.Cmd, string) {
	t.Helper()
	c := runChild(t, dir)
	return c.cmd, c.base
}

// child is fleetcam running in a child process.
type child struct {
	cmd  *exec.Cmd
	base string // HTTP base URL
	mqtt string // MQTT TCP address
}

// runChild runs fleetcam in a child process over dir, with env added to
// its environment, and returns it once it logged its start.
func runChild(t *testing.T, dir string, env ...string) child {
	t.Helper()
	return runChildLogged(t, dir, "", nil, env...)
}

// runChildLogged is runChild that also reads the configuration file config
// (when not empty) and hands every line the child logs to onLine (when not
// nil), from the goroutine that reads them.
func runChildLogged(t *testing.T, dir, config string, onLine func([]byte), env ...string) child {
	t.Helper()
	cmd := exec.Command(childProgram.Get(t).Path)
	if config != "" {
		cmd.Args = append(cmd.Args, "-config", config)
	}
	return startChildCmd(t, cmd, dir, onLine, env)
}

// runCrashingChild runs fleetcam in a child process over dir, as runChild
// does, that kills itself right after committing a change that queues a
// device command: the test binary itself, which has the hook.
func runCrashingChild(t *testing.T, dir string) child {
	t.Helper()
	return startChildCmd(t, exec.Command(os.Args[0], "-test.run=^$"), dir, nil, []string{crashEnv + "=1"})
}

// startChildCmd starts cmd, a fleetcam, over dir with env added to its
// environment and returns it once it logged its start, handing every line
// it logs to onLine when not nil.
func startChildCmd(t *testing.T, cmd *exec.Cmd, dir string, onLine func([]byte), env []string) child {
	t.Helper()
	cmd.Env = append(append(os.Environ(), "FLEETCAM_DATA_DIR="+dir,
		"FLEETCAM_HTTP_ADDR=127.0.0.1:0", "FLEETCAM_MQTT_ADDR=127.0.0.1:0",
		"FLEETCAM_PARTNER_EMAIL="+partnerEmail, "FLEETCAM_PARTNER_PASSWORD="+partnerPassword,
		"FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true", "FLEETCAM_LOG_LEVEL=info"), env...)
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	started := make(chan child, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			if onLine != nil {
				onLine(sc.Bytes())
			}
			var line struct {
				Msg  string `json:"msg"`
				HTTP string `json:"http"`
				MQTT string `json:"mqtt"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "fleetcam started" {
				started <- child{cmd: cmd, base: "http://" + line.HTTP, mqtt: line.MQTT}
			}
		}
		io.Copy(io.Discard, logs)
	}()
	select {
	case c := <-started:
		return c
	case <-time.After(patience):
		t.Fatalf("fleetcam child did not start within %v", patience)
	}
	return child{}
}

// TestKilledMidDeliveryLosesNoWebhook kills fleetcam with SIGKILL while
// requests to the webhook receiver are in flight, starts it again on the
// same data dir and checks that every message still arrives, signed, and
// that a message delivered twice carries the same webhook-id both times.
func TestKilledMidDeliveryLosesNoWebhook(t *testing.T) {
	t.Parallel()
	const (
		devices  = 30
		answered = 3 // requests answered before the kill; later ones are held
	)
	dir := t.TempDir()
	var (
		mu       sync.Mutex
		secret   string
		ids      = map[string]string{} // serialNumber → webhook-id
		received int
		bad      int
		arrived  = make(chan struct{}, 1000)
		hold     = make(chan struct{}) // closed after the kill
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if err := webhooks.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			bad++
			mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m map[string]any
		json.Unmarshal(body, &m)
		sn, _ := dig(m, "data", "serialNumber").(string)
		if prev, seen := ids[sn]; seen && prev != r.Header.Get("webhook-id") {
			t.Errorf("device %s delivered again under webhook-id %s, first %s", sn, r.Header.Get("webhook-id"), prev)
		}
		ids[sn] = r.Header.Get("webhook-id")
		received++
		n := received
		mu.Unlock()
		arrived <- struct{}{}
		if n > answered {
			// Unanswered until the kill closes the connection; the
			// restarted fleetcam's requests pass once hold is closed.
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // before rcv.Close, which waits for held requests

	child, base := startChild(t, dir, rcv.URL)
	e := openEnv(t, base)
	imeis := testIMEIs(t, "35693810000100", devices)
	for _, imei := range imeis {
		e.addDevice(imei, imei)
	}
	sec := e.putWebhookSettings(map[string]any{"systemMessagesWebhook": []map[string]any{{
		"url": rcv.URL, "config": map[string]any{"deviceRemoved": map[string]any{"isEnabled": true}}}}})
	mu.Lock()
	secret = sec
	mu.Unlock()

	// Every removal is a deviceRemoved message in the outbox, committed with
	// the removal itself.
	for _, imei := range imeis {
		if status, out := e.c.call("DELETE", e.org+"/devices/"+imei, e.tok, nil); status != http.StatusOK {
			t.Fatalf("remove device: %d %v", status, out)
		}
	}
	// Killed once some requests were answered and at least one is in flight.
	for i := 0; i <= answered; i++ {
		select {
		case <-arrived:
		case <-time.After(patience):
			t.Fatalf("%d of %d webhooks arrived before the kill", i, answered+1)
		}
	}
	child.Process.Kill()
	child.Wait()
	release()
	mu.Lock()
	before := received
	mu.Unlock()
	if before >= devices {
		t.Fatalf("all %d webhooks arrived before the kill; the test proves nothing", before)
	}

	startChild(t, dir, rcv.URL)
	eventually(t, "every deviceRemoved webhook after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ids) == devices
	})
	mu.Lock()
	defer mu.Unlock()
	for _, imei := range imeis {
		if ids[imei] == "" {
			t.Errorf("no webhook for %s", imei)
		}
	}
	if bad != 0 {
		t.Errorf("%d deliveries failed signature verification", bad)
	}
	t.Logf("%d arrived before the kill, %d requests in all for %d messages", before, received, devices)
}
