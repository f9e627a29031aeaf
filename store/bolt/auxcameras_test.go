package bolt_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fleetcam/fleetcam/store"
)

// The auxiliary cameras the older version stored, one JSON list under the
// IMEI, are read; a change rewrites the list under the same key, by camera
// id.
func TestAuxCameraKeys(t *testing.T) {
	f := newDeviceFixture(t)
	imei := f.dev.IMEI
	f.put("aux_cameras", []byte(imei), []byte(`[{"cameraId":52,"serialNumber":"S52","paired":true,"connected":false}]`))
	f.view(func(tx *store.Tx) error {
		cams, err := tx.AuxCameras(imei)
		if err != nil || len(cams) != 1 || cams[0].CameraID != 52 || cams[0].SerialNumber != "S52" || !cams[0].Paired {
			t.Errorf("stored cameras read as %+v %v", cams, err)
		}
		if cams, err := tx.AuxCameras("490154203237526"); err != nil || cams != nil {
			t.Errorf("cameras of a device without any %+v %v", cams, err)
		}
		return nil
	})
	f.update(func(tx *store.Tx) error {
		return tx.RecordAuxPairing(f.dev, []store.AuxCamera{{CameraID: 51, SerialNumber: "S51"}})
	})
	var cams []store.AuxCamera
	if err := json.Unmarshal(f.get("aux_cameras", []byte(imei)), &cams); err != nil || len(cams) != 2 ||
		cams[0].CameraID != 51 || cams[1].CameraID != 52 {
		t.Errorf("cameras after pairing %s %v", fmt.Sprint(cams), err)
	}
	f.update(func(tx *store.Tx) error { return tx.RemoveDevice(imei) })
	if v := f.get("aux_cameras", []byte(imei)); v != nil {
		t.Errorf("cameras of the removed device %s", v)
	}
}
