package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store"
)

// alarms returns the alarms GET /v2/alarms lists for the device.
func (e *fleetEnv) alarms() []map[string]any {
	e.t.Helper()
	status, out := e.c.call("GET", "/v2/alarms?imei="+e.imei, e.tok, nil)
	if status != http.StatusOK {
		e.t.Fatalf("GET /v2/alarms: %d %v", status, out)
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
	t.Parallel()
	onEveryEngine(t, testDeviceHealthEndToEnd)
}

func testDeviceHealthEndToEnd(t *testing.T, engine envOption) {
	e := startEnv(t, engine, withSMTP(), withDevice("35693810000200", "Truck 12"), withWebhooks(func(base string) map[string]any {
		return map[string]any{
			"alarmsWebhookUrl":    []string{base + "/alarms"},
			"alarmsWebhookConfig": map[string]any{"subscribeForAlarmUpdates": map[string]any{"isEnabled": true}},
		}
	}))
	e.connect(nil)
	e.waitOnline()
	status, out := e.c.call("POST", "/v2/recipients/alarms", e.tok, map[string]any{
		"email": "fleet-manager@northwind.example", "organizationId": e.orgID,
		"alarmDefinitions": []map[string]any{{"id": store.AlarmSDCardFailing}}})
	if status != http.StatusOK {
		t.Fatalf("add alarm recipient: %d %v", status, out)
	}
	if len(e.alarms()) != 0 {
		t.Fatal("a healthy device has alarms")
	}

	ctx := context.Background()
	if err := e.dev.SetHealth(ctx, devicesim.Health{SDCardFailing: true}); err != nil {
		t.Fatal(err)
	}
	var alarm map[string]any
	eventually(t, "the SD card alarm in GET /v2/alarms", func() bool {
		list := e.alarms()
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
	e.webhook("the alarm webhook", "alarms", func(b map[string]any) bool {
		return b["messageType"] == "created" && dig(b, "data", "id") == float64(alarmID) &&
			dig(b, "data", "alarmDefinitionId") == float64(store.AlarmSDCardFailing) && dig(b, "data", "imei") == e.imei
	})
	mail := e.smtp.Await(t, "the alarm e-mail", patience)
	if strings.Join(mail.To, ",") != "fleet-manager@northwind.example" || !strings.Contains(mail.Data, "Subject: [fleetcam] Alarm: SD card failing on Truck 12 ("+e.imei+")") ||
		!strings.Contains(mail.Data, fmt.Sprintf("Alarm %d: SD card failing", alarmID)) {
		t.Fatalf("alarm e-mail to %v:\n%s", mail.To, mail.Data)
	}

	// Healthy again: the alarm closes by itself.
	if err := e.dev.SetHealth(ctx, devicesim.Health{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the alarm to close automatically", func() bool {
		_, out := e.c.call("GET", "/v2/alarms/"+strconv.FormatInt(alarmID, 10), e.tok, nil)
		return dig(out, "data", "isOpen") == false && dig(out, "data", "lastCloseAt") != nil
	})
	e.webhook("the alarm's closed webhook", "alarms", func(b map[string]any) bool {
		return b["messageType"] == "closed" && dig(b, "data", "id") == float64(alarmID) && dig(b, "data", "isOpen") == false
	})
	if list := e.alarms(); len(list) != 1 {
		t.Fatalf("alarms after recovery %v, want the one closed alarm", list)
	}
	e.checkSignatures()
}

// TestAuxCamerasEndToEnd: a partner searches and pairs an auxiliary camera
// through the API, the simulated dashcam pairs it, and the camera's
// connect and disconnect at the device reach the organization as signed
// systemMessages and activation webhooks.
func TestAuxCamerasEndToEnd(t *testing.T) {
	t.Parallel()
	e := startEnv(t, withDevice("35693810000300", "Truck 12"), withWebhooks(func(base string) map[string]any {
		return map[string]any{
			"activationWebhookUrl": []string{base + "/activation"},
			"systemMessagesWebhook": []map[string]any{{"url": base + "/system", "config": map[string]any{
				"auxiliaryCamerasConnectionStatus": map[string]any{"isEnabled": true},
				"auxiliaryCamerasPairingStatus":    map[string]any{"isEnabled": true}}}},
		}
	}))
	e.connect(nil)
	e.waitOnline()
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
	e.webhook("the paired system message", "systemMessages", func(b map[string]any) bool {
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
	e.webhook("the connected system message", "systemMessages", auxMessage("systemMessages", "connected"))
	e.webhook("the connected activation message", "activation", auxMessage("activation", "connected"))

	// Unplugged at the device, then plugged in again.
	if err := e.dev.SetAuxCameraConnected(context.Background(), 50, false); err != nil {
		t.Fatal(err)
	}
	e.webhook("the disconnected system message", "systemMessages", auxMessage("systemMessages", "disconnected"))
	e.webhook("the disconnected activation message", "activation", auxMessage("activation", "disconnected"))
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
	e.checkSignatures()
}
