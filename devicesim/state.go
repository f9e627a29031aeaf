package devicesim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// persisted is what a dashcam keeps across power cycles: one small JSON file
// per IMEI in the state directory, readable by its owner only.
type persisted struct {
	IMEI            string                  `json:"imei"`
	Token           string                  `json:"token,omitempty"`
	TokenIssuedAt   int64                   `json:"tokenIssuedAt,omitempty"`
	Config          *protocol.DesiredConfig `json:"config,omitempty"`
	SDCard          protocol.SDCard         `json:"sdCard"`
	HotspotOn       bool                    `json:"hotspotOn"`
	HotspotPassword string                  `json:"hotspotPassword,omitempty"`
	// AuxCameras are the paired auxiliary cameras, by camera id.
	AuxCameras []auxPairing `json:"auxCameras,omitempty"`
}

// StatePath returns the state file of imei in dir.
func StatePath(dir, imei string) string { return filepath.Join(dir, imei+".json") }

// loadState reads imei's state file; a missing file (or no dir) is a new device.
func loadState(dir, imei string) (persisted, error) {
	st := persisted{IMEI: imei}
	if dir == "" {
		return st, nil
	}
	raw, err := os.ReadFile(StatePath(dir, imei))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("devicesim: read state: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("devicesim: state file %s is not valid JSON: %w", StatePath(dir, imei), err)
	}
	if st.IMEI != imei {
		return st, fmt.Errorf("devicesim: state file %s belongs to imei %q: %w", StatePath(dir, imei), st.IMEI, ErrInvalidOptions)
	}
	return st, nil
}

// saveState writes st atomically (temporary file, then rename) with mode 0600.
func saveState(dir string, st persisted) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("devicesim: state dir: %w", err)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("devicesim: encode state: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+st.IMEI+"-*")
	if err != nil {
		return fmt.Errorf("devicesim: write state: %w", err)
	}
	tmp := f.Name()
	if err := f.Chmod(0o600); err == nil {
		_, err = f.Write(raw)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, StatePath(dir, st.IMEI))
		}
		if err == nil {
			return nil
		}
	}
	_ = f.Close()
	_ = os.Remove(tmp)
	return fmt.Errorf("devicesim: write state: %w", err)
}

// persist saves the device's state; the caller holds d.mu.
func (d *Device) persistLocked() {
	if err := saveState(d.o.StateDir, d.st); err != nil {
		d.log.Warn("save state", "err", err)
		d.lastErr = err
	}
}

// cloneConfig deep-copies a configuration through JSON.
func cloneConfig(c *protocol.DesiredConfig) *protocol.DesiredConfig {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	var out protocol.DesiredConfig
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return &out
}
