package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store"
)

// fleetEnv is a running fleetcam with one organization, one device in its
// inventory, a partner's webhook receiver with the organization's webhook
// settings, and the simulated dashcam of that device, connected.
type fleetEnv struct {
	a     *app
	c     client
	tok   string
	orgID int64
	imei  string
	dev   *devicesim.Device
	rcv   *receiver
}

// startFleetEnv starts fleetcam with cfg tuned by tune, sets webhooks
// (given the receiver's base URL) and runs the dashcam of imeiBody until the
// test ends.
func startFleetEnv(t *testing.T, imeiBody string, tune func(*configs.Config), webhooks func(base string) map[string]any) *fleetEnv {
	t.Helper()
	dir := t.TempDir()
	cfg := configs.Default()
	cfg.DataDir = dir
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.MQTT.Addr = "127.0.0.1:0"
	cfg.Bootstrap.PartnerEmail = "ops@fleet.example"
	cfg.Bootstrap.PartnerPassword = "Partner123"
	cfg.Auth.BcryptCost = 4
	cfg.Webhooks.AllowPrivateTargets = true
	if tune != nil {
		tune(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); a.stop(5 * time.Second) })

	e := &fleetEnv{a: a, c: client{t: t, base: "http://" + a.httpAddr.String()}}
	e.tok = e.c.login("ops@fleet.example", "Partner123")
	status, out := e.c.call("POST", "/v2/organizations", e.tok, map[string]any{"name": "Northwind Haulage"})
	if status != http.StatusOK {
		t.Fatalf("create organization: %d %v", status, out)
	}
	e.orgID = int64(dig(out, "data", "organizationId").(float64))
	org := "/v2/organizations/" + strconv.FormatInt(e.orgID, 10)
	imeis, err := devicesim.IMEIs(imeiBody, 1)
	if err != nil {
		t.Fatal(err)
	}
	e.imei = imeis[0]
	if status, out = e.c.call("POST", org+"/devices", e.tok, map[string]any{"imei": e.imei, "name": "Truck 12"}); status != http.StatusOK {
		t.Fatalf("add device: %d %v", status, out)
	}
	e.rcv = newReceiver(t)
	if status, out = e.c.call("POST", org+"/webhook-settings", e.tok, webhooks(e.rcv.srv.URL)); status != http.StatusOK {
		t.Fatalf("webhook settings: %d %v", status, out)
	}
	e.rcv.mu.Lock()
	e.rcv.secret, _ = dig(out, "data", "webhookSecret").(string)
	e.rcv.mu.Unlock()
	if e.rcv.secret == "" {
		t.Fatalf("no webhook secret in %v", out)
	}

	master, _ := hex.DecodeString(cfg.Devices.FactoryMasterKey)
	e.dev, err = devicesim.New(devicesim.Options{IMEI: e.imei, BrokerURL: "tcp://" + a.broker.Addr(),
		FactoryMasterKey: master, StateDir: filepath.Join(dir, "sim")})
	if err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan struct{})
	go func() { defer close(simDone); e.dev.Run(simCtx) }()
	t.Cleanup(func() { stopSim(); <-simDone }) // runs before fleetcam stops
	eventually(t, "the device to be online", func() bool {
		_, out := e.c.call("GET", "/v2/devices/"+e.imei, e.tok, nil)
		return dig(out, "data", "status") == "online"
	})
	return e
}

// webhook waits for a verified delivery of type typ that match accepts.
func (e *fleetEnv) webhook(t *testing.T, what, typ string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	var got map[string]any
	eventually(t, what, func() bool {
		got = e.rcv.find(func(b map[string]any) bool { return b["type"] == typ && match(b) })
		return got != nil
	})
	return got
}

// checkSignatures fails the test if any delivery failed verification.
func (e *fleetEnv) checkSignatures(t *testing.T) {
	t.Helper()
	e.rcv.mu.Lock()
	defer e.rcv.mu.Unlock()
	if e.rcv.badSigns != 0 {
		t.Fatalf("%d webhook deliveries failed signature verification", e.rcv.badSigns)
	}
}

// alarms returns the alarms GET /v2/alarms lists for the device.
func (e *fleetEnv) alarms(t *testing.T) []map[string]any {
	t.Helper()
	status, out := e.c.call("GET", "/v2/alarms?imei="+e.imei, e.tok, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v2/alarms: %d %v", status, out)
	}
	var list []map[string]any
	for _, a := range dig(out, "data").([]any) {
		list = append(list, a.(map[string]any))
	}
	return list
}

// TestDeviceHealthEndToEnd: a simulated dashcam reports a failing SD card;
// fleetcam raises the SD card alarm (listed by GET /v2/alarms, sent as a
// signed alarm webhook and e-mailed to the organization's alarm recipient
// through the configured SMTP server) and closes it automatically when the
// device reports the card healthy again.
func TestDeviceHealthEndToEnd(t *testing.T) {
	smtp := startSMTPSink(t)
	e := startFleetEnv(t, "35693810000200", func(c *configs.Config) {
		c.SMTP.Addr = smtp.addr()
		c.SMTP.PollInterval = 50 * time.Millisecond
	}, func(base string) map[string]any {
		return map[string]any{
			"alarmsWebhookUrl":    []string{base + "/alarms"},
			"alarmsWebhookConfig": map[string]any{"subscribeForAlarmUpdates": map[string]any{"isEnabled": true}},
		}
	})
	status, out := e.c.call("POST", "/v2/recipients/alarms", e.tok, map[string]any{
		"email": "fleet-manager@northwind.example", "organizationId": e.orgID,
		"alarmDefinitions": []map[string]any{{"id": store.AlarmSDCardFailing}}})
	if status != http.StatusOK {
		t.Fatalf("add alarm recipient: %d %v", status, out)
	}
	if len(e.alarms(t)) != 0 {
		t.Fatal("a healthy device has alarms")
	}

	ctx := context.Background()
	if err := e.dev.SetHealth(ctx, devicesim.Health{SDCardFailing: true}); err != nil {
		t.Fatal(err)
	}
	var alarm map[string]any
	eventually(t, "the SD card alarm in GET /v2/alarms", func() bool {
		list := e.alarms(t)
		if len(list) == 1 {
			alarm = list[0]
		}
		return alarm != nil
	})
	if alarm["alarmDefinitionId"] != float64(store.AlarmSDCardFailing) || alarm["isOpen"] != true ||
		alarm["isSimulated"] != false || alarm["alarmDefinitionName"] != "SD card failing" {
		t.Fatalf("alarm %v", alarm)
	}
	alarmID := int64(alarm["id"].(float64))
	e.webhook(t, "the alarm webhook", "alarms", func(b map[string]any) bool {
		return b["messageType"] == "created" && dig(b, "data", "id") == float64(alarmID) &&
			dig(b, "data", "alarmDefinitionId") == float64(store.AlarmSDCardFailing) && dig(b, "data", "imei") == e.imei
	})
	mail := smtp.await(t, "the alarm e-mail")
	if mail.to != "fleet-manager@northwind.example" || !strings.Contains(mail.data, "Subject: [fleetcam] Alarm: SD card failing on Truck 12 ("+e.imei+")") ||
		!strings.Contains(mail.data, fmt.Sprintf("Alarm %d: SD card failing", alarmID)) {
		t.Fatalf("alarm e-mail to %s:\n%s", mail.to, mail.data)
	}

	// Healthy again: the alarm closes by itself.
	if err := e.dev.SetHealth(ctx, devicesim.Health{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the alarm to close automatically", func() bool {
		_, out := e.c.call("GET", "/v2/alarms/"+strconv.FormatInt(alarmID, 10), e.tok, nil)
		return dig(out, "data", "isOpen") == false && dig(out, "data", "lastCloseAt") != nil
	})
	e.webhook(t, "the alarm's closed webhook", "alarms", func(b map[string]any) bool {
		return b["messageType"] == "closed" && dig(b, "data", "id") == float64(alarmID) && dig(b, "data", "isOpen") == false
	})
	if list := e.alarms(t); len(list) != 1 {
		t.Fatalf("alarms after recovery %v, want the one closed alarm", list)
	}
	e.checkSignatures(t)
}

// TestAuxCamerasEndToEnd: a partner searches and pairs an auxiliary camera
// through the API, the simulated dashcam pairs it, and the camera's
// connect and disconnect at the device reach the organization as signed
// systemMessages and activation webhooks.
func TestAuxCamerasEndToEnd(t *testing.T) {
	e := startFleetEnv(t, "35693810000300", nil, func(base string) map[string]any {
		return map[string]any{
			"activationWebhookUrl": []string{base + "/activation"},
			"systemMessagesWebhook": []map[string]any{{"url": base + "/system", "config": map[string]any{
				"auxiliaryCamerasConnectionStatus": map[string]any{"isEnabled": true},
				"auxiliaryCamerasPairingStatus":    map[string]any{"isEnabled": true}}}},
		}
	})
	nearby := e.dev.NearbyAuxCameras()
	status, out := e.c.call("GET", "/v2/devices/"+e.imei+"/auxiliary-cameras/search?limit=2", e.tok, nil)
	found, _ := dig(out, "data", "auxiliaryCameras").([]any)
	if status != http.StatusOK || len(found) != 2 || dig(found[0].(map[string]any), "ssid") != nearby[0].SSID {
		t.Fatalf("search: %d %v", status, out)
	}
	want := nearby[1] // a Wi-Fi camera
	status, out = e.c.call("POST", "/v2/devices/"+e.imei+"/auxiliary-cameras/pair", e.tok,
		map[string]any{"auxiliaryCameras": []map[string]any{{"ssid": want.SSID}}})
	paired, _ := dig(out, "data", "auxiliaryCameras").([]any)
	if status != http.StatusOK || len(paired) != 1 {
		t.Fatalf("pair: %d %v", status, out)
	}
	if p := paired[0].(map[string]any); p["cameraId"] != float64(50) || p["serialNumber"] != want.SerialNumber || p["kind"] != "wifi" {
		t.Fatalf("paired camera %v", p)
	}
	if cams := e.dev.AuxCameras(); len(cams) != 1 || cams[0].ID != 50 || !cams[0].Connected {
		t.Fatalf("cameras paired at the device %+v", cams)
	}
	e.webhook(t, "the paired system message", "systemMessages", func(b map[string]any) bool {
		return b["messageType"] == store.SystemAuxCameraPairing && dig(b, "data", "status") == "paired" &&
			dig(b, "data", "cameraId") == float64(50)
	})
	auxMessage := func(typ, state string) func(map[string]any) bool {
		return func(b map[string]any) bool {
			return b["type"] == typ && b["messageType"] == store.SystemAuxCameraStatus && dig(b, "data", "status") == state &&
				dig(b, "data", "cameraId") == float64(50) && dig(b, "data", "cameraSerialNumber") == want.SerialNumber &&
				dig(b, "data", "connectionType") == "wifi" && dig(b, "data", "imei") == e.imei
		}
	}
	e.webhook(t, "the connected system message", "systemMessages", auxMessage("systemMessages", "connected"))
	e.webhook(t, "the connected activation message", "activation", auxMessage("activation", "connected"))

	// Unplugged at the device, then plugged in again.
	if err := e.dev.SetAuxCameraConnected(context.Background(), 50, false); err != nil {
		t.Fatal(err)
	}
	e.webhook(t, "the disconnected system message", "systemMessages", auxMessage("systemMessages", "disconnected"))
	e.webhook(t, "the disconnected activation message", "activation", auxMessage("activation", "disconnected"))
	eventually(t, "the camera listed as disconnected", func() bool {
		_, out := e.c.call("GET", "/v2/devices/"+e.imei+"/auxiliary-cameras", e.tok, nil)
		list, _ := dig(out, "data").([]any)
		return len(list) == 1 && dig(list[0].(map[string]any), "connected") == false
	})
	if err := e.dev.Play(context.Background(), devicesim.Step{Action: devicesim.ActionAuxConnect, CameraID: 50}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a second connected message", func() bool {
		n := 0
		match := auxMessage("systemMessages", "connected")
		e.rcv.find(func(b map[string]any) bool {
			if match(b) {
				n++
			}
			return false
		})
		return n == 2
	})

	// Unpairing through the API reaches the device.
	status, out = e.c.call("POST", "/v2/devices/"+e.imei+"/auxiliary-cameras/unpair", e.tok,
		map[string]any{"auxiliaryCameras": []map[string]any{{"serialNumber": want.SerialNumber}}})
	if status != http.StatusOK {
		t.Fatalf("unpair: %d %v", status, out)
	}
	if cams := e.dev.AuxCameras(); len(cams) != 0 {
		t.Fatalf("cameras still paired at the device %+v", cams)
	}
	e.checkSignatures(t)
}

// smtpSink is a minimal SMTP server on 127.0.0.1:0 that keeps the messages it accepts.
type smtpSink struct {
	ln      net.Listener
	mu      sync.Mutex
	mails   []sunkMail
	arrived chan struct{}
}

// sunkMail is one accepted message.
type sunkMail struct {
	to   string
	data string
}

func startSMTPSink(t *testing.T) *smtpSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpSink{ln: ln, arrived: make(chan struct{}, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *smtpSink) addr() string { return s.ln.Addr().String() }

func (s *smtpSink) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	reply := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	reply("220 sink ESMTP")
	var to string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "RCPT TO:"):
			to = strings.Trim(strings.TrimSpace(line)[len("RCPT TO:"):], "<>")
			reply("250 OK")
		case cmd == "DATA":
			reply("354 go ahead")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			s.mu.Lock()
			s.mails = append(s.mails, sunkMail{to: to, data: b.String()})
			s.mu.Unlock()
			select {
			case s.arrived <- struct{}{}:
			default:
			}
			reply("250 queued")
		case cmd == "QUIT":
			reply("221 bye")
			return
		default: // EHLO, MAIL FROM, RSET
			reply("250 OK")
		}
	}
}

// await returns the first message, waiting up to 20 seconds.
func (s *smtpSink) await(t *testing.T, what string) sunkMail {
	t.Helper()
	select {
	case <-s.arrived:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mails[0]
}
