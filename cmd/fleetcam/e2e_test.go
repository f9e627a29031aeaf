package main

import (
	"bytes"
	"context"
	"fmt"
	"image/jpeg"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/devicesim/mp4"
)

// TestEndToEnd runs fleetcam as it runs in production (store, broker, API,
// webhook delivery) with a simulated dashcam and a partner's webhook
// receiver: activation, configuration push, an event delivered as a signed
// webhook, a privacy switch and a command with a reply.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	onEveryEngine(t, testEndToEnd)
}

func testEndToEnd(t *testing.T, engine envOption) {
	e := startEnv(t, engine, withDevice("35693810000000", "Truck 7"), withWebhooks(func(base string) map[string]any {
		return map[string]any{
			"eventWebhookUrl":      []string{base + "/events"},
			"activationWebhookUrl": []string{base + "/activation"},
			"systemMessagesWebhook": []map[string]any{{"url": base + "/system",
				"config": map[string]any{"privacyMode": map[string]any{"isEnabled": true}}}},
		}
	}))
	c, tok, imei, rcv := e.c, e.tok, e.imei, e.rcv
	dev := e.connect(nil)
	ctx := context.Background()

	eventually(t, "the device to connect with its token", func() bool { return dev.Connected() && dev.Token() != "" })
	eventually(t, "the device to be online and activated", func() bool {
		_, out := c.call("GET", "/v2/devices/"+imei, tok, nil)
		return dig(out, "data", "activationStatus") == "activated" && dig(out, "data", "status") == "online"
	})
	eventually(t, "the activation webhook", func() bool {
		return rcv.find(func(b map[string]any) bool { return b["type"] == "activation" }) != nil
	})

	// A configuration change reaches the connected device, which acknowledges it.
	if status, out := c.call("PUT", "/v2/devices/"+imei+"/device-config", tok, map[string]any{"brightness": map[string]any{"value": 77}}); status != http.StatusOK {
		t.Fatalf("device config: %d %v", status, out)
	}
	eventually(t, "the device to apply brightness 77", func() bool {
		cfg := dev.AppliedConfig()
		return cfg != nil && cfg.Device.Brightness == 77
	})
	eventually(t, "the acknowledged configuration version", func() bool {
		_, out := c.call("GET", "/v2/devices/"+imei, tok, nil)
		return dig(out, "data", "connection", "configPending") == false
	})

	// An event becomes a signed event webhook in webhook syntax.
	ev, err := dev.Emit(ctx, devicesim.EventSpec{Type: "deceleration"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the event webhook", func() bool {
		return rcv.find(func(b map[string]any) bool {
			return b["type"] == "event" && dig(b, "data", "eventType") == "de_acceleration" && dig(b, "data", "serialNumber") == imei
		}) != nil
	})

	// The event's camera files reach the cloud over signed upload URLs: its
	// video as an MP4, and the snapshot of the video's middle frame as a JPEG.
	if len(ev.Files) == 0 {
		t.Fatal("the simulated event carries no files")
	}
	f := ev.Files[0]
	if info, err := mp4.Probe(mediaFile(t, c, tok, imei, f.FileID, "video", f.CameraID)); err != nil || info.Frames == 0 || info.Width == 0 {
		t.Fatalf("the video of the event is not an MP4 video: %+v %v", info, err)
	}
	if _, err := jpeg.Decode(bytes.NewReader(mediaFile(t, c, tok, imei, f.FileID, "snapshot", f.CameraID))); err != nil {
		t.Fatalf("the snapshot of the event is not JPEG data: %v", err)
	}
	// A virtual event of the same moment gets its own snapshot from the recording.
	status, out := c.call("POST", "/v2/devices/"+imei+"/virtual-event", tok, map[string]any{
		"time": time.UnixMilli(ev.Time).UTC().Format(time.RFC3339), "mediaType": "snapshot", "cameraId": 1})
	files, _ := dig(out, "data", "files").([]any)
	if status != http.StatusOK || len(files) != 1 {
		t.Fatalf("virtual event: %d %v", status, out)
	}
	virtualFile := dig(files[0].(map[string]any), "fileId").(string)
	if _, err := jpeg.Decode(bytes.NewReader(mediaFile(t, c, tok, imei, virtualFile, "snapshot", 1))); err != nil {
		t.Fatalf("virtual event snapshot: %v", err)
	}

	// Privacy mode reaches the device through a command.
	status, out = c.call("POST", "/v2/devices/privacy-control", tok, map[string]any{"imeis": []string{imei}, "privacyMode": "on"})
	if status != http.StatusOK {
		t.Fatalf("privacy control: %d %v", status, out)
	}
	eventually(t, "privacy mode on at the device", func() bool { return dev.PrivacyMode() == "on" })

	// A command with a reply: formatting the SD card returns the new card.
	status, out = c.call("GET", "/v2/devices/"+imei+"/format-storage", tok, nil)
	if status != http.StatusOK || dig(out, "data", "sdCard", "uuid") == "" || dig(out, "data", "sdCard", "uuid") == nil {
		t.Fatalf("format storage: %d %v", status, out)
	}

	// A privacy switch made while the device is offline is accepted for later,
	// applied when it reconnects, and reported then as a system message.
	dev.GoOffline(time.Hour)
	eventually(t, "the device to be offline", func() bool {
		_, out := c.call("GET", "/v2/devices/"+imei, tok, nil)
		return dig(out, "data", "connection", "status") == "offline"
	})
	status, out = c.call("POST", "/v2/devices/privacy-control", tok, map[string]any{"imeis": []string{imei}, "privacyMode": "off"})
	if status != http.StatusOK {
		t.Fatalf("privacy control while offline: %d %v", status, out)
	}
	if dev.PrivacyMode() != "on" {
		t.Fatalf("an offline device changed privacy mode to %q", dev.PrivacyMode())
	}
	if accepted, _ := dig(out, "data", "accepted").([]any); len(accepted) != 1 || accepted[0] != imei {
		t.Fatalf("privacy switch for an offline device not accepted for later: %v", out)
	}
	dev.ComeBack()
	eventually(t, "privacy mode off after reconnecting", func() bool { return dev.PrivacyMode() == "off" })
	eventually(t, "the privacyMode system message of the applied switch", func() bool {
		return rcv.find(func(b map[string]any) bool {
			return b["type"] == "systemMessages" && dig(b, "data", "change") == "applied" &&
				dig(b, "data", "after") == "off" && dig(b, "data", "serialNumber") == imei
		}) != nil
	})

	e.checkSignatures()
}

// mediaFile waits for an event file to be in the cloud and downloads it
// through the temporary link of event-file-link.
func mediaFile(t *testing.T, c client, tok, imei, fileID, fileType string, camera int) []byte {
	t.Helper()
	res, err := http.Get(fileLink(t, c, tok, imei, fileID, fileType, camera))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("download %s: %d, %d bytes", fileType, res.StatusCode, len(body))
	}
	return body
}

// fileLink waits for an event file to be in the cloud and returns its
// temporary link from event-file-link.
func fileLink(t *testing.T, c client, tok, imei, fileID, fileType string, camera int) string {
	t.Helper()
	path := fmt.Sprintf("/v2/devices/%s/event-file-link?fileId=%s&fileType=%s&cameraId=%d", imei, fileID, fileType, camera)
	var link string
	eventually(t, "the "+fileType+" of file "+fileID+" in the cloud", func() bool {
		status, out := c.call("GET", path, tok, nil)
		link, _ = dig(out, "data", "url").(string)
		return status == http.StatusOK && link != ""
	})
	return link
}
