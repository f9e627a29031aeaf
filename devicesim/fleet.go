package devicesim

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// FleetOptions configure a fleet of devices that share one Stats.
type FleetOptions struct {
	// Device is the template of every device; IMEI and Stats are set per fleet.
	Device Options
	// IMEIs are the devices' IMEIs (see IMEIs to generate a range).
	IMEIs []string
	// ConnectRate is how many devices start per second; 0: all at once.
	ConnectRate float64
}

// Fleet runs many devices in one process.
type Fleet struct {
	devices []*Device
	stats   *Stats
	rate    float64
}

// NewFleet creates the devices (reading their state files) without connecting them.
func NewFleet(o FleetOptions) (*Fleet, error) {
	if len(o.IMEIs) == 0 {
		return nil, fmt.Errorf("devicesim: a fleet needs at least one imei: %w", ErrInvalidOptions)
	}
	if o.ConnectRate < 0 {
		return nil, fmt.Errorf("devicesim: connectRate %g must not be negative: %w", o.ConnectRate, ErrInvalidOptions)
	}
	st := o.Device.Stats
	if st == nil {
		st = NewStats()
	}
	st.Expect(len(o.IMEIs))
	f := &Fleet{stats: st, rate: o.ConnectRate, devices: make([]*Device, 0, len(o.IMEIs))}
	seen := map[string]bool{}
	for _, imei := range o.IMEIs {
		if seen[imei] {
			return nil, fmt.Errorf("devicesim: imei %s appears twice in the fleet: %w", imei, ErrInvalidOptions)
		}
		seen[imei] = true
		opt := o.Device
		opt.IMEI, opt.Stats = imei, st
		d, err := New(opt)
		if err != nil {
			return nil, err
		}
		f.devices = append(f.devices, d)
	}
	return f, nil
}

// Devices returns the fleet's devices in IMEI order given.
func (f *Fleet) Devices() []*Device { return f.devices }

// Stats returns the counters the devices share.
func (f *Fleet) Stats() *Stats { return f.stats }

// Run starts the devices at the connect rate and returns when ctx ends and
// every device has stopped.
func (f *Fleet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	var tick <-chan time.Time
	if f.rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / f.rate))
		defer t.Stop()
		tick = t.C
	}
	for i, d := range f.devices {
		if tick != nil && i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-tick:
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.Run(ctx)
		}()
	}
	<-ctx.Done()
	return nil
}
