package store

import (
	"slices"
	"strconv"
)

// Camera retention: how long each camera's recordings stay on the device's
// SD card before they are overwritten, per device. A camera the device's
// list leaves out keeps the organization's (Retention.DeviceMinutes). The
// list is part of the device's settings, so a change reaches the device
// with its next configuration version.

// CameraRetention is one camera's retention on the SD card.
type CameraRetention struct {
	CameraID         int `json:"cameraId"`
	RetentionMinutes int `json:"retentionMinutes"`
}

// Bounds of an SD-card retention, a camera's or an organization's: at
// least 4 minutes, at most a year.
const (
	MinCameraRetentionMinutes = 4
	MaxCameraRetentionMinutes = 366 * 24 * 60
)

// validateCameraRetention checks list: valid, distinct camera ids, each
// retention within the bounds. An error names the member.
func validateCameraRetention(list []CameraRetention) error {
	for i, r := range list {
		at := "config[" + strconv.Itoa(i) + "]"
		switch {
		case !ValidCameraID(r.CameraID):
			return Invalid(at+".cameraId", RuleCameraID)
		case slices.ContainsFunc(list[:i], func(o CameraRetention) bool { return o.CameraID == r.CameraID }):
			return Invalid(at+".cameraId", "names camera %d a second time", r.CameraID)
		case r.RetentionMinutes < MinCameraRetentionMinutes || r.RetentionMinutes > MaxCameraRetentionMinutes:
			return Invalid(at+".retentionMinutes", "must be from %d to %d", MinCameraRetentionMinutes, MaxCameraRetentionMinutes)
		}
	}
	return nil
}

// SetCameraRetention replaces the device's own camera retention with list,
// ordered by camera id, and audits the change (device.retentionConfig). The
// auxiliary cameras it names must be paired with the device.
func (tx *Tx) SetCameraRetention(imei string, list []CameraRetention) error {
	if err := validateCameraRetention(list); err != nil {
		return err
	}
	aux, err := tx.AuxCameras(imei)
	if err != nil {
		return err
	}
	for i, r := range list {
		if r.CameraID >= MinAuxCameraID && !slices.ContainsFunc(aux, func(a AuxCamera) bool { return a.CameraID == r.CameraID && a.Paired }) {
			return Invalid("config["+strconv.Itoa(i)+"].cameraId", "auxiliary camera %d is not paired with device %s", r.CameraID, imei)
		}
	}
	s, err := tx.DeviceSettings(imei)
	if err != nil {
		return err
	}
	next := *s
	next.CameraRetention = slices.Clone(list)
	slices.SortFunc(next.CameraRetention, func(a, b CameraRetention) int { return a.CameraID - b.CameraID })
	return tx.PutDeviceSettings(&next, "device.retentionConfig")
}

// CameraRetentionMinutes returns the retention of each camera of e that
// has one: the device's own, else the organization's, for the cameras listed
// (the cameras of the device).
func (e *Effective) CameraRetentionMinutes(cameras []int) []CameraRetention {
	var out []CameraRetention
	for _, cam := range cameras {
		minutes := e.RetentionMinutes
		if i := slices.IndexFunc(e.CameraRetention, func(r CameraRetention) bool { return r.CameraID == cam }); i >= 0 {
			minutes = e.CameraRetention[i].RetentionMinutes
		}
		if minutes > 0 {
			out = append(out, CameraRetention{CameraID: cam, RetentionMinutes: minutes})
		}
	}
	return out
}
