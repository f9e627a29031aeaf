package cloudapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"mime"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// TestSettingsThatForbidLiveVideoEndTheStream: every settings write that
// makes live streaming impossible for a device ends its running stream
// once committed: the viewer's response ends, the device is told to stop,
// and a later frame is answered 410.
func TestSettingsThatForbidLiveVideoEndTheStream(t *testing.T) {
	t.Parallel()
	type write struct {
		method, path string
		body         map[string]any
	}
	imeis := func(e *mediaEnv) []string { return []string{e.dev.IMEI} }
	tests := []struct {
		name  string
		setup func(e *mediaEnv) []write
		write func(e *mediaEnv) write
	}{
		{"privacy mode on, its configuration without liveVideo", nil, func(e *mediaEnv) write {
			return write{"POST", "/v2/devices/privacy-control", map[string]any{"imeis": imeis(e), "privacyMode": "general"}}
		}},
		{"device configuration privacy.liveStreamEnabled false", nil, func(e *mediaEnv) write {
			return write{"PUT", devPath(e.dev.IMEI, "/device-config"), map[string]any{"privacy": map[string]any{"liveStreamEnabled": false}}}
		}},
		{"device configuration liveVideo false", nil, func(e *mediaEnv) write {
			return write{"PUT", devPath(e.dev.IMEI, "/device-config"), map[string]any{"liveVideo": v(false)}}
		}},
		{"organization privacy configuration in privacy mode", func(e *mediaEnv) []write {
			return []write{{"PATCH", orgPath(e.org.ID, "/privacy-config"), map[string]any{"liveVideo": "enabled"}},
				{"POST", "/v2/devices/privacy-control", map[string]any{"imeis": imeis(e), "privacyMode": "general"}}}
		}, func(e *mediaEnv) write {
			return write{"PATCH", orgPath(e.org.ID, "/privacy-config"), map[string]any{"liveVideo": "disabled"}}
		}},
		{"device privacy configuration in privacy mode", func(e *mediaEnv) []write {
			return []write{{"PATCH", "/v2/devices/bulk/privacy-config", map[string]any{"imeis": imeis(e),
				"privacyConfig": map[string]any{"liveVideo": "enabled"}}},
				{"POST", "/v2/devices/privacy-control", map[string]any{"imeis": imeis(e), "privacyMode": "general"}}}
		}, func(e *mediaEnv) write {
			return write{"PATCH", "/v2/devices/bulk/privacy-config", map[string]any{"imeis": imeis(e),
				"privacyConfig": map[string]any{"liveVideo": "disabled"}}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newMediaEnv(t)
			if tc.setup != nil {
				for _, w := range tc.setup(e) {
					e.do(w.method, w.path, e.partnerToken, w.body).want(http.StatusOK)
				}
			}
			watch := e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).want(http.StatusOK).str("data.url")
			res, err := e.srv.Client().Get(watch)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			_, params, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
			parts := multipart.NewReader(bufio.NewReader(res.Body), params["boundary"])
			if _, err := parts.NextPart(); err != nil {
				t.Fatalf("the first frame: %v", err)
			}
			ended := make(chan error, 1)
			w := tc.write(e)
			e.do(w.method, w.path, e.partnerToken, w.body).want(http.StatusOK)
			go func() {
				for {
					if _, err := parts.NextPart(); err != nil {
						ended <- err
						return
					}
				}
			}()
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatal("frames still reach the viewer after the write")
			}
			wantStreamStopped(t, e)
			e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).wantError(423, nameLocked)
		})
	}
}

// TestConnectMediaRefusedInPrivacyMode: privacy mode whose configuration
// keeps liveVideo off refuses connect-media with 423 naming the setting,
// without commanding the device; with liveVideo enabled it streams.
func TestConnectMediaRefusedInPrivacyMode(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	e.do("POST", "/v2/devices/privacy-control", e.partnerToken, map[string]any{"imeis": []string{e.dev.IMEI}, "privacyMode": "general"}).
		want(http.StatusOK)
	e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).
		wantError(423, nameLocked, "privacy mode", "privacy-config liveVideo")
	if n := len(e.cmd.commands(protocol.CmdLiveStream)); n != 0 {
		t.Fatalf("%d liveStream commands for a refused connect-media", n)
	}
	e.do("PATCH", orgPath(e.org.ID, "/privacy-config"), e.partnerToken, map[string]any{"liveVideo": "enabled"}).want(http.StatusOK)
	e.do("POST", devPath(e.dev.IMEI, "/connect-media"), e.partnerToken, nil).want(http.StatusOK)
}

// wantStreamStopped checks that the device was told to start a stream and
// then to stop it, and that its next frame is answered 410.
func wantStreamStopped(t *testing.T, e *mediaEnv) {
	t.Helper()
	cmds := e.cmd.waitCommands(protocol.CmdLiveStream, 2)
	var start, stop protocol.LiveStreamArgs
	if len(cmds) != 2 || json.Unmarshal(cmds[0].args, &start) != nil || json.Unmarshal(cmds[1].args, &stop) != nil ||
		stop.Start || stop.CameraID != 1 {
		t.Fatalf("liveStream commands %v, want a start and a stop", cmds)
	}
	late, err := e.srv.Client().Post(start.URL, "image/jpeg", bytes.NewReader(testJPEG("late frame")))
	if err != nil {
		t.Fatal(err)
	}
	late.Body.Close()
	if late.StatusCode != http.StatusGone {
		t.Fatalf("a frame after the write: %d, want 410", late.StatusCode)
	}
}
