package cloudapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

func TestFormatStorage(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 3)
	online, offline, failing := w.imeis[0], w.imeis[1], w.imeis[2]
	w.cmd.setOnline(online, true)
	w.cmd.setOnline(failing, true)
	w.cmd.reply(protocol.CmdFormatStorage, func(imei string) (json.RawMessage, error) {
		switch imei {
		case online:
			return json.Marshal(protocol.SDCard{Present: true, Healthy: true, UUID: "5f1c-77aa", Manufacturer: "SanDisk"})
		}
		return nil, fmt.Errorf("%w: no card", ErrCommandFailed)
	})
	r := w.do("GET", "/v2/devices/"+online+"/format-storage", w.editor, nil).want(http.StatusOK)
	if r.str("data.sdCard.uuid") != "5f1c-77aa" || r.str("data.sdCard.manufacturer") != "SanDisk" {
		t.Fatalf("answer %s", r.raw)
	}
	sent, _, _ := w.cmd.take()
	if len(sent) != 1 || sent[0].IMEI != online || sent[0].Name != protocol.CmdFormatStorage {
		t.Fatalf("sent %+v", sent)
	}
	if a := w.audit("device.formatStorage"); len(a) != 1 || a[0].EntityID != online {
		t.Fatalf("audit %+v", a)
	}
	w.do("GET", "/v2/devices/"+offline+"/format-storage", w.editor, nil).
		wantError(http.StatusExpectationFailed, nameExpectationFailed, "online")
	w.do("GET", "/v2/devices/"+failing+"/format-storage", w.editor, nil).
		wantError(http.StatusExpectationFailed, nameExpectationFailed, "could not carry out")
	w.cmd.reply(protocol.CmdFormatStorage, func(string) (json.RawMessage, error) { return nil, ErrCommandTimeout })
	w.do("GET", "/v2/devices/"+online+"/format-storage", w.editor, nil).
		wantError(http.StatusExpectationFailed, nameExpectationFailed, "did not answer in time")
	if sent, queued, _ := w.cmd.take(); len(sent) != 2 || len(queued) != 0 {
		t.Fatalf("sent %+v queued %+v: an offline device must not get a command", sent, queued)
	}
}
