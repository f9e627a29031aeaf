package devicesim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// Health faults by name, as the -health flag and the health scenario action
// spell them.
const (
	FaultSDCardMissing       = "sdCardMissing"       // no SD card mounted
	FaultSDCardFailing       = "sdCardFailing"       // the SD card reports errors
	FaultRecordingTestFailed = "recordingTestFailed" // the recording health test failed
	FaultCameraDisconnected  = "cameraDisconnected"  // the in-cabin camera (2) is unplugged
	FaultPowerDisconnected   = "powerDisconnected"   // vehicle power lost, running on battery
)

// faultNames lists the faults in the order Faults reports them.
var faultNames = []string{FaultSDCardMissing, FaultSDCardFailing, FaultRecordingTestFailed,
	FaultCameraDisconnected, FaultPowerDisconnected}

// Health is the set of faults a device reports in its status; the zero
// value is a healthy device. The cloud raises an alarm for each fault and
// closes it when a later status shows the member healthy again.
type Health struct {
	// SDCardMissing reports the SD card as not present (it wins over SDCardFailing).
	SDCardMissing bool
	// SDCardFailing reports the SD card as present but not healthy.
	SDCardFailing bool
	// RecordingTestFailed reports the recording health test as failed.
	RecordingTestFailed bool
	// CameraDisconnected reports the in-cabin camera (2) as not connected.
	CameraDisconnected bool
	// PowerDisconnected reports vehicle power as disconnected.
	PowerDisconnected bool
}

// ParseHealth builds a Health from fault names (see the Fault constants);
// no names is a healthy device. The error names the unknown fault.
func ParseHealth(faults []string) (Health, error) {
	h, err := parseFaults(faults)
	if err != nil {
		return Health{}, fmt.Errorf("devicesim: health: %v: %w", err, ErrInvalidOptions)
	}
	return h, nil
}

// parseFaults is ParseHealth with an error that names only the fault.
func parseFaults(faults []string) (Health, error) {
	var h Health
	for _, f := range faults {
		switch strings.TrimSpace(f) {
		case FaultSDCardMissing:
			h.SDCardMissing = true
		case FaultSDCardFailing:
			h.SDCardFailing = true
		case FaultRecordingTestFailed:
			h.RecordingTestFailed = true
		case FaultCameraDisconnected:
			h.CameraDisconnected = true
		case FaultPowerDisconnected:
			h.PowerDisconnected = true
		case "":
		default:
			return Health{}, fmt.Errorf("fault %q must be one of %s", f, strings.Join(faultNames, ", "))
		}
	}
	return h, nil
}

// Faults returns the names of h's faults; none for a healthy device.
func (h Health) Faults() []string {
	on := []bool{h.SDCardMissing, h.SDCardFailing, h.RecordingTestFailed, h.CameraDisconnected, h.PowerDisconnected}
	var out []string
	for i, name := range faultNames {
		if on[i] {
			out = append(out, name)
		}
	}
	return out
}

// Health returns the faults the device reports.
func (d *Device) Health() Health {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.health
}

// SetHealth replaces the faults the device reports and publishes its
// status at once when connected; an offline device reports them with the
// status it sends after reconnecting.
func (d *Device) SetHealth(ctx context.Context, h Health) error {
	d.mu.Lock()
	d.health = h
	d.mu.Unlock()
	return d.statusIfConnected(ctx)
}

// statusIfConnected publishes the status when the device is connected.
func (d *Device) statusIfConnected(ctx context.Context) error {
	if err := d.publishStatus(ctx); err != nil && !errors.Is(err, ErrOffline) {
		return err
	}
	return nil
}

// applyHealthLocked writes the device's faults into st; the caller holds d.mu.
func (d *Device) applyHealthLocked(st *protocol.Status) {
	h := d.health
	switch {
	case h.SDCardMissing:
		st.SDCard = &protocol.SDCard{Present: false, Healthy: false}
	case h.SDCardFailing && st.SDCard != nil:
		sd := *st.SDCard
		sd.Healthy = false
		st.SDCard = &sd
	}
	if h.RecordingTestFailed {
		st.RecordingTest = "failed"
	}
	if h.PowerDisconnected {
		power := false
		st.PowerConnected = &power
	}
	if h.CameraDisconnected {
		for i := range st.Cameras {
			if st.Cameras[i].ID == 2 {
				st.Cameras[i].Connected = false
			}
		}
	}
}
