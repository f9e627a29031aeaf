package devicesim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Scenario actions besides events.
const (
	ActionOffline       = "offline"       // drop the connection for Duration
	ActionReboot        = "reboot"        // disconnect cleanly, reconnect after the reboot delay
	ActionFactoryReset  = "factoryReset"  // drop the token and settings, bootstrap again
	ActionCheckIn       = "checkIn"       // driver check-in by PinCode or QRCode
	ActionCheckOut      = "checkOut"      // driver check-out
	ActionFormatStorage = "formatStorage" // new SD card UUID, sdCardFormatted event
	ActionHealth        = "health"        // report Faults (none: healthy) from now on
	ActionAuxConnect    = "auxConnect"    // plug in the paired auxiliary camera CameraID
	ActionAuxDisconnect = "auxDisconnect" // unplug the paired auxiliary camera CameraID
)

// Step is one entry of a scenario timeline: at At after the device starts,
// report event Type, or do Action.
type Step struct {
	At           Offset `yaml:"at" json:"at"`
	Type         string `yaml:"type,omitempty" json:"type,omitempty"`
	Action       string `yaml:"action,omitempty" json:"action,omitempty"`
	Duration     Offset `yaml:"duration,omitempty" json:"duration,omitempty"`
	Severity     int    `yaml:"severity,omitempty" json:"severity,omitempty"`
	PinCode      string `yaml:"pinCode,omitempty" json:"pinCode,omitempty"`
	QRCode       string `yaml:"qrCode,omitempty" json:"qrCode,omitempty"`
	DriverID     int64  `yaml:"driverId,omitempty" json:"driverId,omitempty"`
	GeoFenceID   int64  `yaml:"geoFenceId,omitempty" json:"geoFenceId,omitempty"`
	GeoFencePath string `yaml:"geoFencePath,omitempty" json:"geoFencePath,omitempty"`
	CameraID     int    `yaml:"cameraId,omitempty" json:"cameraId,omitempty"`
	// Faults are the health faults of a health action (see the Fault constants).
	Faults []string `yaml:"faults,omitempty" json:"faults,omitempty"`
}

// Scenario is a scripted timeline, steps in time order. With Loop it starts
// over after its last step (at least a second later).
type Scenario struct {
	Loop  bool   `yaml:"loop" json:"loop"`
	Steps []Step `yaml:"steps" json:"steps"`
}

// Offset is a time offset written as a Go duration ("90s", "1m30s") or a
// number of seconds.
type Offset time.Duration

// UnmarshalYAML accepts "90s" or 90.
func (o *Offset) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		*o = Offset(v * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q must be a duration such as 90s or a number of seconds", n.Line, n.Value)
	}
	*o = Offset(v)
	return nil
}

// ParseScenario reads a scenario in YAML or JSON: either a list of steps or
// {loop, steps}. Every step is checked; the error names the step and field.
func ParseScenario(r io.Reader) (*Scenario, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("devicesim: scenario: %w", err)
	}
	var sc Scenario
	trimmed := bytes.TrimSpace(raw)
	var doc yaml.Node
	if err := yaml.Unmarshal(trimmed, &doc); err != nil {
		return nil, fmt.Errorf("devicesim: scenario: %v: %w", err, ErrInvalidScenario)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("devicesim: scenario: no steps: %w", ErrInvalidScenario)
	}
	root := doc.Content[0]
	if root.Kind == yaml.SequenceNode {
		err = root.Decode(&sc.Steps)
	} else {
		err = root.Decode(&sc)
	}
	if err != nil {
		return nil, fmt.Errorf("devicesim: scenario: %v: %w", err, ErrInvalidScenario)
	}
	if len(sc.Steps) == 0 {
		return nil, fmt.Errorf("devicesim: scenario: no steps: %w", ErrInvalidScenario)
	}
	for i, s := range sc.Steps {
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("devicesim: scenario step %d: %v: %w", i+1, err, ErrInvalidScenario)
		}
	}
	sort.SliceStable(sc.Steps, func(i, j int) bool { return sc.Steps[i].At < sc.Steps[j].At })
	return &sc, nil
}

// LoadScenario reads a scenario file; see ParseScenario.
func LoadScenario(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("devicesim: scenario: %w", err)
	}
	defer f.Close()
	return ParseScenario(f)
}

func (s Step) validate() error {
	if s.At < 0 {
		return errors.New("at must not be negative")
	}
	if (s.Type == "") == (s.Action == "") {
		return errors.New("needs exactly one of type (an event) and action")
	}
	if s.Type != "" {
		if _, ok := kinds[s.Type]; !ok {
			return fmt.Errorf("type %q is not an API-syntax event type", s.Type)
		}
	}
	if s.Severity < 0 || s.Severity > 3 {
		return fmt.Errorf("severity %d must be 1, 2 or 3", s.Severity)
	}
	if s.GeoFencePath != "" && s.GeoFencePath != "entered" && s.GeoFencePath != "exited" {
		return fmt.Errorf("geoFencePath %q must be entered or exited", s.GeoFencePath)
	}
	switch s.Action {
	case "", ActionReboot, ActionFactoryReset, ActionCheckOut, ActionFormatStorage:
	case ActionOffline:
		if s.Duration <= 0 {
			return errors.New("offline needs a positive duration")
		}
	case ActionCheckIn:
		if (s.PinCode == "") == (s.QRCode == "") {
			return errors.New("checkIn needs exactly one of pinCode and qrCode")
		}
		if s.PinCode != "" && !fiveDigits(s.PinCode) {
			return fmt.Errorf("pinCode %q must be 5 digits", s.PinCode)
		}
	case ActionHealth:
		if _, err := parseFaults(s.Faults); err != nil {
			return fmt.Errorf("faults: %v", err)
		}
	case ActionAuxConnect, ActionAuxDisconnect:
		if s.CameraID < minAuxCameraID {
			return fmt.Errorf("%s needs the cameraId of a paired auxiliary camera (%d or above)", s.Action, minAuxCameraID)
		}
	default:
		return fmt.Errorf("action %q must be one of offline, reboot, factoryReset, checkIn, checkOut, formatStorage, health, auxConnect, auxDisconnect", s.Action)
	}
	if s.Faults != nil && s.Action != ActionHealth {
		return errors.New("faults belong to a health action")
	}
	return nil
}

// runScenario plays sc from now.
func (d *Device) runScenario(ctx context.Context, sc *Scenario) {
	for {
		start := time.Now()
		for _, s := range sc.Steps {
			if !sleepCtx(ctx, time.Until(start.Add(time.Duration(s.At)))) {
				return
			}
			if err := d.Play(ctx, s); err != nil && !errors.Is(err, ErrSuppressed) {
				d.setErr(err)
			}
		}
		if !sc.Loop {
			return
		}
		if !sleepCtx(ctx, time.Second) {
			return
		}
	}
}

// Play performs one scenario step now.
func (d *Device) Play(ctx context.Context, s Step) error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("devicesim: step: %v: %w", err, ErrInvalidScenario)
	}
	switch s.Action {
	case "":
		_, err := d.Emit(ctx, EventSpec{Type: s.Type, Severity: s.Severity, QRCode: s.QRCode, PinCode: s.PinCode,
			DriverID: s.DriverID, GeoFenceID: s.GeoFenceID, GeoFencePath: s.GeoFencePath, CameraID: s.CameraID})
		return err
	case ActionOffline:
		d.GoOffline(time.Duration(s.Duration))
	case ActionReboot:
		d.Reboot()
	case ActionFactoryReset:
		d.FactoryReset()
	case ActionCheckIn:
		_, err := d.CheckIn(ctx, s.PinCode, s.QRCode)
		return err
	case ActionCheckOut:
		return d.CheckOut(ctx)
	case ActionFormatStorage:
		sd, err := d.formatStorage()
		if err != nil {
			return err
		}
		if _, err := d.Emit(ctx, EventSpec{Type: "sdCardFormatted", SDCard: &sd}); err != nil {
			return err
		}
		if d.Connected() {
			return d.publishStatus(ctx)
		}
	case ActionHealth:
		h, err := ParseHealth(s.Faults)
		if err != nil {
			return err
		}
		return d.SetHealth(ctx, h)
	case ActionAuxConnect, ActionAuxDisconnect:
		return d.SetAuxCameraConnected(ctx, s.CameraID, s.Action == ActionAuxConnect)
	}
	return nil
}
