package devicesim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// eventKind is how the device produces one event type.
type eventKind struct {
	media    string     // "video" (road and cabin), "snapshot" (cabin) or "" (text only)
	mvai     bool       // an MV+AI (in-cabin AI) event, subject to mvaiEnabled and the minimum speed
	system   bool       // a device report that privacy's allEventsEnabled does not stop
	weight   int        // share in random driving; 0: never random
	beep     string     // the beep event that precedes it
	severity int        // 1 high, 2 medium, 3 low
	peak     [3]float64 // accelerometer peak (x, y, z without gravity) in m/s²
}

// kinds lists every API-syntax event type of the event catalogue.
var kinds = map[string]eventKind{
	"acceleration":         {media: "video", weight: 8, severity: 3, peak: [3]float64{0, 4, 0}},
	"accident":             {media: "video", weight: 1, severity: 1, peak: [3]float64{25, -30, 15}},
	"button":               {media: "video", weight: 2, severity: 2},
	"cellPhoneUse":         {media: "video", mvai: true, weight: 4, beep: "cellPhoneUseBeep", severity: 2},
	"cellPhoneUseBeep":     {mvai: true, severity: 3},
	"deceleration":         {media: "video", weight: 10, severity: 2, peak: [3]float64{0, -6, 0}},
	"deviceActivation":     {system: true, severity: 3},
	"distractedDriving":    {media: "video", mvai: true, weight: 4, beep: "distractedDriverBeep", severity: 2},
	"distractedDriverBeep": {mvai: true, severity: 3},
	"driverCheckIn":        {media: "snapshot", system: true, severity: 3},
	"driverCheckOut":       {system: true, severity: 3},
	"driverUnbelted":       {media: "video", mvai: true, weight: 2, beep: "driverUnbeltedBeep", severity: 2},
	"driverUnbeltedBeep":   {mvai: true, severity: 3},
	"standbyEnter":         {system: true, severity: 3},
	"standbyExit":          {system: true, severity: 3},
	"geoFence":             {severity: 3},
	"foodDrink":            {media: "video", mvai: true, weight: 2, beep: "foodDrinkBeep", severity: 3},
	"foodDrinkBeep":        {mvai: true, severity: 3},
	"gsensorHigh":          {media: "video", weight: 2, severity: 1, peak: [3]float64{9, -12, 8}},
	"gsensorRegular":       {media: "video", weight: 4, severity: 2, peak: [3]float64{4, -5, 3}},
	"laneWeaving":          {media: "video", mvai: true, weight: 3, severity: 2, peak: [3]float64{2.5, 0, 0}},
	"noCheckIn":            {severity: 3},
	"obstruction":          {media: "video", mvai: true, weight: 1, severity: 2},
	"passengerUnbelted":    {media: "video", mvai: true, weight: 1, severity: 3},
	"possibleFatigue":      {media: "video", mvai: true, weight: 1, severity: 1},
	"powerDisconnectAlarm": {system: true, severity: 2},
	"accOff":               {system: true, severity: 3},
	"accOn":                {system: true, severity: 3},
	"qrCode":               {media: "snapshot", severity: 3},
	"sdCardFormatted":      {system: true, severity: 3},
	"smoking":              {media: "video", mvai: true, weight: 2, beep: "smokingBeep", severity: 2},
	"smokingBeep":          {mvai: true, severity: 3},
	"speedLimit":           {media: "video", severity: 2},
	"tailgating":           {media: "video", mvai: true, weight: 3, severity: 2},
	"coverOpened":          {system: true, severity: 2},
	"jolt":                 {media: "video", severity: 2, peak: [3]float64{1.5, 1.5, 2}},
	"sharpTurnLeft":        {media: "video", weight: 5, severity: 2, peak: [3]float64{-5, 0, 0}},
	"sharpRightTurn":       {media: "video", weight: 5, severity: 2, peak: [3]float64{5, 0, 0}},
	"virtualEvent":         {media: "video", severity: 3},
	"wrongPinCode":         {severity: 2},
}

// EventTypes lists every API-syntax event type the device can report, sorted.
func EventTypes() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// EventMedia returns the media an event type carries: "video" (cameras 1
// and 2), "snapshot" (camera 2) or "" (text only, e.g. beeps, accOn, accOff).
func EventMedia(eventType string) string { return kinds[eventType].media }

// EventSpec describes an event to report; zero members take defaults
// (now, the kind's severity, the device's position).
type EventSpec struct {
	Type         string
	Time         time.Time
	Severity     int
	QRCode       string
	PinCode      string
	DriverID     int64
	GeoFenceID   int64
	GeoFencePath string
	CameraID     int
	SDCard       *protocol.SDCard
}

// Emit reports an event: position and speed from the route, accelerometer
// samples, and a file per camera that recorded it when the kind has media.
// It returns ErrSuppressed when the applied configuration disables it
// (unless Options.IgnoreEventConfig), and queues it while offline.
func (d *Device) Emit(ctx context.Context, spec EventSpec) (protocol.Event, error) {
	k, ok := kinds[spec.Type]
	if !ok {
		return protocol.Event{}, fmt.Errorf("devicesim: event type %q: %w", spec.Type, ErrUnknownEvent)
	}
	now := d.now()
	t := spec.Time
	if t.IsZero() {
		t = now
	}
	pos := d.Position(t)
	if !d.o.IgnoreEventConfig {
		if err := d.allowed(spec.Type, k, pos.Speed); err != nil {
			d.stats.suppressed.Add(1)
			return protocol.Event{}, err
		}
	}
	ev := protocol.Event{
		ID: d.nextEventID(), Type: spec.Type, Time: t.UnixMilli(),
		Lat: round6(pos.Lat), Lon: round6(pos.Lon), Alt: math.Round(pos.Alt*10) / 10,
		Speed: math.Round(pos.Speed*10) / 10, Accuracy: 3 + math.Round(d.randFloat()*50)/10,
		Severity: k.severity, QRCode: spec.QRCode, PinCode: spec.PinCode, DriverID: spec.DriverID,
		GeoFenceID: spec.GeoFenceID, GeoFencePath: spec.GeoFencePath, CameraID: spec.CameraID, SDCard: spec.SDCard,
	}
	if spec.Severity != 0 {
		ev.Severity = spec.Severity
	}
	if k.media != "" || k.peak != [3]float64{} {
		ev.Samples = d.samples(t, pos.Speed, k.peak)
	}
	if k.media != "" {
		cams := []int{1, 2}
		if k.media == "snapshot" {
			cams = []int{2}
		}
		id := strconv.FormatInt(t.UnixMilli(), 10)
		for _, cam := range cams {
			if d.cameraRecords(cam) && d.cameraMedia(cam) && d.rec.has(cam, t, now) {
				ev.Files = append(ev.Files, protocol.File{CameraID: cam, FileID: id, FileType: k.media})
			}
		}
		if len(ev.Files) > 0 {
			d.rememberFile(id, fileInfo{Time: t, CameraID: ev.Files[0].CameraID, FileType: k.media, Duration: eventClip})
		}
	}
	d.stats.events.Add(1)
	return ev, d.publishOrQueue(ctx, protocol.TopicEvent, ev, ev.ID)
}

// allowed applies the device and privacy configuration to an event.
func (d *Device) allowed(typ string, k eventKind, speedKmh float64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.st.Config
	if c == nil {
		return nil
	}
	if s, ok := c.Events.Events[typ]; ok && !s.Enabled {
		return fmt.Errorf("devicesim: %s is disabled in the event config: %w", typ, ErrSuppressed)
	}
	if !k.system && !c.Privacy.AllEventsEnabled {
		return fmt.Errorf("devicesim: %s: privacy allEventsEnabled is false: %w", typ, ErrSuppressed)
	}
	if k.mvai {
		switch {
		case !c.Privacy.MvaiEnabled:
			return fmt.Errorf("devicesim: %s: privacy mvaiEnabled is false: %w", typ, ErrSuppressed)
		case c.Events.MvaiMinSpeedKmh < 5:
			return fmt.Errorf("devicesim: %s: MV+AI minimum speed %d km/h is below 5: %w", typ, c.Events.MvaiMinSpeedKmh, ErrSuppressed)
		case speedKmh < float64(c.Events.MvaiMinSpeedKmh):
			return fmt.Errorf("devicesim: %s: speed %.0f km/h is below the MV+AI minimum %d: %w", typ, speedKmh, c.Events.MvaiMinSpeedKmh, ErrSuppressed)
		}
	}
	return nil
}

// nextEventID returns an id unique for this device across restarts and
// factory resets: the epoch of the device's boot and a sequence number.
func (d *Device) nextEventID() string {
	d.mu.Lock()
	epoch := d.epoch
	d.mu.Unlock()
	return epoch + "-" + strconv.FormatInt(d.eventSeq.Add(1), 10)
}

// samples returns five accelerometer samples a second apart around t, with
// the kind's peak at t and gravity on z.
func (d *Device) samples(t time.Time, speedKmh float64, peak [3]float64) []protocol.Sample {
	out := make([]protocol.Sample, 0, 5)
	for i := -2; i <= 2; i++ {
		w := []float64{0.1, 0.5, 1, 0.4, 0.1}[i+2]
		noise := func() float64 { return math.Round((d.randFloat()-0.5)*40) / 100 }
		out = append(out, protocol.Sample{
			X:     math.Round((peak[0]*w+noise())*100) / 100,
			Y:     math.Round((peak[1]*w+noise())*100) / 100,
			Z:     math.Round((9.81+peak[2]*w+noise())*100) / 100,
			Time:  t.Unix() + int64(i),
			Speed: math.Round(speedKmh/3.6*100) / 100,
		})
	}
	return out
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// ErrWrongPIN means a check-in PIN or QR code matches no allowed driver.
var ErrWrongPIN = errors.New("devicesim: pin or qr code matches no driver")

// CheckIn checks a driver in by 5-digit PIN or by QR code and reports
// driverCheckIn. When the configuration lists drivers, the code must match
// one; three wrong PINs within three minutes report wrongPinCode.
func (d *Device) CheckIn(ctx context.Context, pinCode, qrCode string) (protocol.Event, error) {
	if (pinCode == "") == (qrCode == "") {
		return protocol.Event{}, fmt.Errorf("devicesim: check-in needs exactly one of pinCode and qrCode: %w", ErrInvalidOptions)
	}
	if pinCode != "" && !fiveDigits(pinCode) {
		return protocol.Event{}, fmt.Errorf("devicesim: pinCode %q must be 5 digits: %w", pinCode, ErrInvalidOptions)
	}
	now := d.now()
	d.mu.Lock()
	var driverID int64
	matched := true
	if c := d.st.Config; c != nil && len(c.Drivers) > 0 {
		matched = false
		for _, dr := range c.Drivers {
			if (pinCode != "" && dr.PinCode == pinCode) || (qrCode != "" && dr.QRCode == qrCode) {
				driverID, matched = dr.DriverID, true
				break
			}
		}
	}
	wrongPins := 0
	if !matched && pinCode != "" {
		keep := d.wrongPins[:0]
		for _, t := range d.wrongPins {
			if now.Sub(t) < 3*time.Minute {
				keep = append(keep, t)
			}
		}
		d.wrongPins = append(keep, now)
		wrongPins = len(d.wrongPins)
		if wrongPins >= 3 {
			d.wrongPins = nil
		}
	}
	if matched {
		d.driver = &driverState{DriverID: driverID, PinCode: pinCode, QRCode: qrCode}
		d.wrongPins = nil
	}
	d.mu.Unlock()
	if !matched {
		if wrongPins >= 3 {
			if _, err := d.Emit(ctx, EventSpec{Type: "wrongPinCode", PinCode: pinCode}); err != nil && !errors.Is(err, ErrSuppressed) {
				return protocol.Event{}, err
			}
		}
		return protocol.Event{}, ErrWrongPIN
	}
	return d.Emit(ctx, EventSpec{Type: "driverCheckIn", PinCode: pinCode, QRCode: qrCode, DriverID: driverID})
}

// CheckOut checks the current driver out and reports driverCheckOut.
func (d *Device) CheckOut(ctx context.Context) error {
	d.mu.Lock()
	var id int64
	if d.driver != nil {
		id = d.driver.DriverID
	}
	d.driver = nil
	d.mu.Unlock()
	_, err := d.Emit(ctx, EventSpec{Type: "driverCheckOut", DriverID: id})
	return err
}

func fiveDigits(s string) bool {
	if len(s) != 5 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// runRandomEvents reports random driving events at Options.EventRate per
// second (exponential gaps); kinds with a beep get two beeps first.
func (d *Device) runRandomEvents(ctx context.Context) {
	seed := uint64(d.eventSeq.Load()) ^ uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	var pool []string
	for _, typ := range EventTypes() {
		for i := 0; i < kinds[typ].weight; i++ {
			pool = append(pool, typ)
		}
	}
	for {
		gap := time.Duration(rng.ExpFloat64() / d.o.EventRate * float64(time.Second))
		if !sleepCtx(ctx, gap) {
			return
		}
		typ := pool[rng.IntN(len(pool))]
		now := d.now()
		if b := kinds[typ].beep; b != "" {
			for i := 2; i >= 1; i-- {
				d.emitQuiet(ctx, EventSpec{Type: b, Time: now.Add(-time.Duration(i) * 3 * time.Second)})
			}
		}
		d.emitQuiet(ctx, EventSpec{Type: typ, Time: now})
	}
}

// emitQuiet emits and records errors other than suppression.
func (d *Device) emitQuiet(ctx context.Context, spec EventSpec) {
	if _, err := d.Emit(ctx, spec); err != nil && !errors.Is(err, ErrSuppressed) {
		d.setErr(err)
	}
}

// sleepCtx waits for dur or the end of ctx; false when ctx ended.
func sleepCtx(ctx context.Context, dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
