package bolt

import "github.com/fleetcam/fleetcam/store"

// auxCameras are the auxiliary cameras of each device: one JSON list under
// the device's IMEI.
type auxCameras struct{ t *tx }

// AuxCameras implements store.DeviceStateRecords.
func (t *tx) AuxCameras() store.AuxCameraRecords { return auxCameras{t} }

// Get implements store.AuxCameraRecords.
func (r auxCameras) Get(imei string) ([]store.AuxCamera, error) {
	var cams []store.AuxCamera
	if err := getJSON(r.t.bucket(bucketAuxCameras), []byte(imei), &cams); err != nil {
		return nil, err
	}
	if cams == nil {
		cams = []store.AuxCamera{} // a list put empty ("null")
	}
	return cams, nil
}

// Put implements store.AuxCameraRecords.
func (r auxCameras) Put(imei string, cams []store.AuxCamera) error {
	return putJSON(r.t.bucket(bucketAuxCameras), []byte(imei), cams)
}

// Delete implements store.AuxCameraRecords.
func (r auxCameras) Delete(imei string) error {
	return r.t.bucket(bucketAuxCameras).Delete([]byte(imei))
}
