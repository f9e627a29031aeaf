package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Health alarms: each status report is checked against the alarm
// definitions. A problem raises its alarm (once while open); a report that
// shows the same member healthy again closes the system alarm it raised
// (auto-close). A member the report leaves out changes nothing. Simulated
// alarms are never auto-closed.

// HealthState is the part of a device's last health report the partner
// statistics count.
type HealthState struct {
	IMEI           string    `json:"imei"`
	RecordingTest  string    `json:"recordingTestResult,omitempty"` // passed, failed; empty: not tested
	AdasCalibrated bool      `json:"adasCalibrated"`
	ReportedAt     time.Time `json:"reportedAt"`
}

// dropHealthState drops the health state of a removed device.
func dropHealthState(tx *Tx, d *Device) error {
	return tx.rec.DeviceHealthStates().Delete(d.IMEI)
}

// DeviceHealthState returns the last health state of imei (empty when never reported).
func (tx *Tx) DeviceHealthState(imei string) (*HealthState, error) {
	h, err := tx.rec.DeviceHealthStates().Get(imei)
	if isNotFound(err) {
		return &HealthState{IMEI: imei}, nil
	}
	return h, err
}

// ApplyHealthAlarms raises and closes dev's health alarms from a status
// report (st, as the broker read it) and records its health state. It
// returns the alarms it raised.
func (tx *Tx) ApplyHealthAlarms(dev *Device, st DeviceHealth) ([]Alarm, error) {
	h, err := tx.DeviceHealthState(dev.IMEI)
	if err != nil {
		return nil, err
	}
	if st.RecordingTest != "" {
		h.RecordingTest = st.RecordingTest
	}
	if st.AdasCalibrated != nil {
		h.AdasCalibrated = *st.AdasCalibrated
	}
	h.IMEI, h.ReportedAt = dev.IMEI, tx.now
	if err := tx.rec.DeviceHealthStates().Put(h); err != nil {
		return nil, err
	}

	type verdict struct {
		def     int64
		bad     bool
		details string
	}
	var checks []verdict
	switch st.RecordingTest {
	case "failed":
		checks = append(checks, verdict{AlarmRecordingFailed, true, "recording health test failed"})
	case "passed":
		checks = append(checks, verdict{AlarmRecordingFailed, false, ""})
	}
	if sd := st.SDCard; sd != nil {
		checks = append(checks,
			verdict{AlarmSDCardMissing, !sd.Present, "SD card is not mounted, the dashcam is not recording video"},
			verdict{AlarmSDCardFailing, sd.Present && !sd.Healthy, "SD card reports errors" + sdName(sd)})
	}
	var down []string
	builtIn := 0
	for _, c := range st.Cameras {
		if c.ID == 1 || c.ID == 2 {
			builtIn++
			if !c.Connected {
				down = append(down, cameraName(c.ID))
			}
		}
	}
	if builtIn > 0 {
		checks = append(checks, verdict{AlarmCameraDisconnected, len(down) > 0, strings.Join(down, ", ") + " disconnected"})
	}
	if st.PowerConnected != nil {
		checks = append(checks, verdict{AlarmPowerDisconnected, !*st.PowerConnected, "vehicle power disconnected"})
	}
	// A report proves the device is back.
	checks = append(checks, verdict{AlarmDeviceOffline, false, ""})

	var raised []Alarm
	for _, v := range checks {
		if v.bad {
			a, created, err := tx.RaiseAlarm(dev, v.def, tx.now, v.details)
			if err != nil {
				return nil, err
			}
			if created {
				raised = append(raised, *a)
			}
			continue
		}
		if err := tx.autoClose(dev.IMEI, v.def); err != nil {
			return nil, err
		}
	}
	return raised, nil
}

func sdName(sd *SDCardHealth) string {
	if sd.Manufacturer == "" && sd.UUID == "" {
		return ""
	}
	return fmt.Sprintf(" (%s %s)", sd.Manufacturer, sd.UUID)
}

func cameraName(id int) string {
	switch id {
	case 1:
		return "road-facing camera (1)"
	case 2:
		return "in-cabin camera (2)"
	}
	return fmt.Sprintf("camera %d", id)
}

// autoClose closes the open system alarm of imei and def, if any.
func (tx *Tx) autoClose(imei string, def int64) error {
	alarmID, err := tx.rec.OpenAlarms().Get(imei, def)
	if err != nil || alarmID == 0 {
		return err
	}
	if _, err := tx.ActOnAlarm(alarmID, AlarmActionClose); err != nil {
		return err
	}
	a, err := tx.Alarm(alarmID)
	if err != nil {
		return err
	}
	a.AutoClosed = true
	return tx.rec.Alarms().Put(a)
}

// RaiseOfflineAlarm raises the device-offline alarm of dev when its last
// contact is older than after; a device that never connected is left alone.
func (tx *Tx) RaiseOfflineAlarm(dev *Device, lastSeen time.Time, after time.Duration) (*Alarm, bool, error) {
	if lastSeen.IsZero() || tx.now.Sub(lastSeen) < after {
		return nil, false, nil
	}
	details := fmt.Sprintf("no contact since %s", lastSeen.UTC().Format(time.RFC3339))
	return tx.RaiseAlarm(dev, AlarmDeviceOffline, tx.now, details)
}

// ApplyStatusReport derives from a device's status report what this
// package keeps beyond presence: health alarms, auxiliary camera connection
// messages and the cellular data usage (a malformed usage member is left
// out). It returns the alarms it raised. The broker runs it in IngestStatus,
// in the transaction that stores the report; st is the report as the
// broker read it.
func (tx *Tx) ApplyStatusReport(dev *Device, st DeviceHealth) ([]Alarm, error) {
	raised, err := tx.ApplyHealthAlarms(dev, st)
	if err != nil {
		return nil, err
	}
	if err := tx.ApplyAuxCameraStatus(dev, st.Cameras); err != nil {
		return nil, err
	}
	if st.DataUsage != nil {
		if err := tx.RecordDataUsage(dev.IMEI, *st.DataUsage); err != nil && !errors.Is(err, ErrInvalid) {
			return nil, err
		}
	}
	return raised, nil
}

// RaiseOfflineAlarms raises the device-offline alarm of every device that
// has been disconnected for longer than after, and returns how many it
// raised. It reads every device's link in one read transaction, the links
// and open alarms of readAheadDevices devices at a time, and writes each
// alarm in a short transaction of its own; it stops when ctx ends.
func (db *DB) RaiseOfflineAlarms(ctx context.Context, after time.Duration) (int, error) {
	type stale struct {
		imei     string
		lastSeen time.Time
	}
	var candidates []stale
	now := db.Now()
	err := db.View(ctx, func(tx *Tx) error {
		devices, _, err := tx.Devices(DeviceFilter{}, Page{})
		if err != nil {
			return err
		}
		for i, d := range devices {
			if i%readAheadDevices == 0 {
				if err := tx.readAhead(devices[i:min(i+readAheadDevices, len(devices))]); err != nil {
					return err
				}
			}
			// A device that never connected has a link with zero times.
			l, err := tx.DeviceLink(d.IMEI)
			if err != nil {
				return err
			}
			seen := l.LastSeen
			if l.DisconnectedAt.After(seen) {
				seen = l.DisconnectedAt
			}
			if l.Online() || seen.IsZero() || now.Sub(seen) < after {
				continue
			}
			if id, err := tx.rec.OpenAlarms().Get(d.IMEI, AlarmDeviceOffline); err != nil {
				return err
			} else if id != 0 {
				continue
			}
			candidates = append(candidates, stale{d.IMEI, seen})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	raised := 0
	for _, c := range candidates {
		err := db.Update(ctx, Actor{Source: "system"}, func(tx *Tx) error {
			dev, err := tx.Device(c.imei)
			if isNotFound(err) {
				return nil
			} else if err != nil {
				return err
			}
			if l, err := tx.DeviceLink(c.imei); err != nil || l.Online() {
				return err
			}
			_, created, err := tx.RaiseOfflineAlarm(dev, c.lastSeen, after)
			if created {
				raised++
			}
			return err
		})
		if err != nil {
			return raised, err
		}
	}
	return raised, nil
}

// WatchOffline runs RaiseOfflineAlarms every interval until ctx ends; a
// zero after or interval disables it.
func (db *DB) WatchOffline(ctx context.Context, after, every time.Duration, log *slog.Logger) {
	if after <= 0 || every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := db.RaiseOfflineAlarms(ctx, after); err != nil {
			log.Error("offline alarms", "err", err)
		} else if n > 0 {
			log.Info("offline alarms raised", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
