package store

import (
	"slices"
	"time"
)

// Auxiliary cameras (camera ids 50 and above) are paired with a dashcam on
// a partner's request; the dashcam then reports them in its status. A
// change of connection is a system message (SystemAuxCameraStatus) and an
// activation message for the organization's webhooks; pairing, unpairing
// and search results are system messages of type SystemAuxCameraPairing.

// MinAuxCameraID is the first auxiliary camera id.
const MinAuxCameraID = 50

// SystemAuxCameraPairing is the system message type of pairing, unpairing
// and search results; webhooks select it with auxiliaryCamerasPairingStatus.
const SystemAuxCameraPairing = "auxiliaryCamerasPairingStatus"

// Auxiliary camera connection states as the messages name them.
const (
	AuxConnected    = "connected"
	AuxDisconnected = "disconnected"
	AuxPaired       = "paired"
	AuxUnpaired     = "unpaired"
)

// AuxCamera is one auxiliary camera known for a device.
type AuxCamera struct {
	CameraID     int       `json:"cameraId"`
	SerialNumber string    `json:"serialNumber,omitempty"`
	SSID         string    `json:"ssid,omitempty"`
	Kind         string    `json:"kind,omitempty"` // wired or wifi
	Paired       bool      `json:"paired"`
	Connected    bool      `json:"connected"`
	PairedAt     time.Time `json:"pairedAt,omitzero"`
	ChangedAt    time.Time `json:"changedAt,omitzero"`
}

// dropAuxCameras drops the auxiliary cameras of a removed device.
func dropAuxCameras(tx *Tx, d *Device) error {
	return tx.rec.AuxCameras().Delete(d.IMEI)
}

// AuxCameras returns the auxiliary cameras known for imei, by camera id.
func (tx *Tx) AuxCameras(imei string) ([]AuxCamera, error) {
	cams, err := tx.rec.AuxCameras().Get(imei)
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	return cams, nil
}

// putAuxCameras stores cams as imei's cameras, by camera id.
func (tx *Tx) putAuxCameras(imei string, cams []AuxCamera) error {
	slices.SortFunc(cams, func(a, b AuxCamera) int { return a.CameraID - b.CameraID })
	return tx.rec.AuxCameras().Put(imei, cams)
}

// RecordAuxPairing stores the cameras a device paired on request and
// announces each as paired.
func (tx *Tx) RecordAuxPairing(dev *Device, paired []AuxCamera) error {
	cams, err := tx.AuxCameras(dev.IMEI)
	if err != nil {
		return err
	}
	for _, p := range paired {
		if p.CameraID < MinAuxCameraID {
			return Invalid("", "auxiliary camera id %d must be %d or above", p.CameraID, MinAuxCameraID)
		}
		p.Paired, p.PairedAt, p.ChangedAt = true, tx.now, tx.now
		i := slices.IndexFunc(cams, func(c AuxCamera) bool { return c.CameraID == p.CameraID })
		if i >= 0 {
			p.Connected = cams[i].Connected
			cams[i] = p
		} else {
			cams = append(cams, p)
		}
		if err := tx.emitAux(dev, p, AuxPaired); err != nil {
			return err
		}
	}
	if err := tx.putAuxCameras(dev.IMEI, cams); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.auxiliaryCameras.pair", EntityType: "device", EntityID: dev.IMEI,
		OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, After: paired})
}

// RecordAuxUnpairing forgets the cameras with the given ids and announces
// each as unpaired.
func (tx *Tx) RecordAuxUnpairing(dev *Device, ids []int) error {
	cams, err := tx.AuxCameras(dev.IMEI)
	if err != nil {
		return err
	}
	var removed []AuxCamera
	cams = slices.DeleteFunc(cams, func(c AuxCamera) bool {
		if slices.Contains(ids, c.CameraID) {
			removed = append(removed, c)
			return true
		}
		return false
	})
	for _, c := range removed {
		if err := tx.emitAux(dev, c, AuxUnpaired); err != nil {
			return err
		}
	}
	if err := tx.putAuxCameras(dev.IMEI, cams); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.auxiliaryCameras.unpair", EntityType: "device", EntityID: dev.IMEI,
		OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, Before: removed})
}

// ApplyAuxCameraStatus compares the auxiliary cameras of a status report
// with those known and announces every connect and disconnect. A report
// that lists no cameras at all changes nothing; a known camera missing from
// a report that lists cameras is disconnected.
func (tx *Tx) ApplyAuxCameraStatus(dev *Device, reportedCams []CameraHealth) error {
	if len(reportedCams) == 0 {
		return nil
	}
	cams, err := tx.AuxCameras(dev.IMEI)
	if err != nil {
		return err
	}
	changed := false
	reported := map[int]bool{}
	for _, rc := range reportedCams {
		if rc.ID < MinAuxCameraID {
			continue
		}
		reported[rc.ID] = true
		i := slices.IndexFunc(cams, func(c AuxCamera) bool { return c.CameraID == rc.ID })
		if i < 0 {
			cams = append(cams, AuxCamera{CameraID: rc.ID})
			i = len(cams) - 1
		}
		c := &cams[i]
		if rc.SerialNumber != "" && c.SerialNumber != rc.SerialNumber || rc.Kind != "" && c.Kind != rc.Kind {
			c.SerialNumber, c.Kind, changed = rc.SerialNumber, rc.Kind, true
		}
		if c.Connected != rc.Connected || c.ChangedAt.IsZero() {
			c.Connected, c.ChangedAt, changed = rc.Connected, tx.now, true
			status := AuxDisconnected
			if rc.Connected {
				status = AuxConnected
			}
			if err := tx.emitAux(dev, *c, status); err != nil {
				return err
			}
		}
	}
	for i := range cams {
		if c := &cams[i]; !reported[c.CameraID] && c.Connected {
			c.Connected, c.ChangedAt, changed = false, tx.now, true
			if err := tx.emitAux(dev, *c, AuxDisconnected); err != nil {
				return err
			}
		}
	}
	if !changed {
		return nil
	}
	return tx.putAuxCameras(dev.IMEI, cams)
}

// emitAux announces a camera's new state: a connection change as a system
// message and an activation message, a pairing change as a system message.
func (tx *Tx) emitAux(dev *Device, c AuxCamera, status string) error {
	typ := SystemAuxCameraStatus
	if status == AuxPaired || status == AuxUnpaired {
		typ = SystemAuxCameraPairing
	}
	m := Message{Kind: MessageSystem, SubType: typ, OrganizationID: dev.OrganizationID,
		PartnerID: dev.PartnerID, IMEI: dev.IMEI, AuxCamera: &AuxCameraFact{Camera: c, Status: status}}
	if err := tx.Emit(m); err != nil || typ == SystemAuxCameraPairing {
		return err
	}
	m.Kind = MessageActivation
	return tx.Emit(m)
}

// RecordAuxSearch announces the cameras a device found in range.
func (tx *Tx) RecordAuxSearch(dev *Device, found []AuxCamera) error {
	if found == nil {
		found = []AuxCamera{}
	}
	return tx.Emit(Message{Kind: MessageSystem, SubType: SystemAuxCameraPairing, OrganizationID: dev.OrganizationID,
		PartnerID: dev.PartnerID, IMEI: dev.IMEI, AuxSearch: &AuxSearchFact{Cameras: found}})
}
