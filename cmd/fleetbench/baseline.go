package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
)

// mosquitto is a mosquitto child process with its own configuration.
type mosquitto struct {
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}
}

// startMosquitto runs bin on a free loopback port with persistence on,
// anonymous clients allowed and the limits raised for a large fleet.
func startMosquitto(ctx context.Context, bin, dir string) (*mosquitto, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := fmt.Sprintf(`# fleetbench baseline: persistence on, loopback only
listener %d 127.0.0.1
allow_anonymous true
persistence true
persistence_location %s/
max_inflight_messages 64
max_queued_messages 1000
log_dest stderr
log_type error
log_type warning
`, port, dir)
	path := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "mosquitto.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-c", path)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	m := &mosquitto{cmd: cmd, addr: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		logf.Close()
		close(m.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", m.addr, time.Second)
		if err == nil {
			c.Close()
			return m, nil
		}
		select {
		case <-m.exited:
			return nil, fmt.Errorf("mosquitto exited at start; see %s", filepath.Join(dir, "mosquitto.log"))
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.stop()
			return nil, errors.New("mosquitto did not listen within 10s")
		}
	}
}

func (m *mosquitto) stop() {
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

// baseline runs the hold and ingest loads against mosquitto and prints
// fleetcam / mosquitto ratios with the fleetcam figures of this run.
func (b *bench) baseline(ctx context.Context) error {
	bin := lookMosquitto(b.o.mosquitto)
	if bin == "" {
		b.rep.skip("baseline", "mosquitto is not installed (make bench installs it with apt-get when run as root; or apt-get install -y mosquitto, or -mosquitto PATH)")
		return nil
	}
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	version := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	dir := b.dir("mosquitto")
	m, err := startMosquitto(ctx, bin, dir)
	if err != nil {
		return err
	}
	defer m.stop()
	url := "tcp://" + m.addr
	pid := m.cmd.Process.Pid
	imeis, err := devicesim.IMEIs(benchIMEIs, max(b.sc.holdDevices, b.sc.ingestDevices, b.sc.closedDevices))
	if err != nil {
		return err
	}
	t := &table{title: "5. Baseline: the same loads against " + version + " (persistence on)",
		cols: []string{"figure", "fleetcam", "mosquitto", "fleetcam / mosquitto"}}

	// Connection hold.
	rss0, _ := procRSS(pid)
	fr, cf, err := b.connectAll(ctx, url, imeis[:b.sc.holdDevices])
	if err != nil {
		return fmt.Errorf("hold: %w", err)
	}
	if err := sleep(ctx, b.sc.holdSettle); err != nil {
		fr.stop()
		return err
	}
	rss, _ := procRSS(pid)
	fr.stop()
	rate := float64(cf.devices) / cf.allConnected.Seconds()
	perDev := float64(rss) / float64(cf.devices) / 1024
	growth := float64(rss-rss0) / float64(cf.devices) / 1024
	b.rep.figure("baseline", "mosquitto_connect_rate", rate, "devices/s")
	b.rep.figure("baseline", "mosquitto_rss_per_device", perDev, "KiB")
	fcRate, fcRSS := 0.0, 0.0
	if b.holdResult != nil {
		fcRate = float64(b.holdResult.devices) / b.holdResult.allConnected.Seconds()
		fcRSS = float64(b.holdRSS) / float64(b.holdResult.devices) / 1024
	}
	t.add(fmt.Sprintf("connect rate, %d devices", cf.devices), num(fcRate)+"/s", num(rate)+"/s", ratio(fcRate, rate))
	t.add("RSS per connected device", num(fcRSS)+" KiB", num(perDev)+" KiB", ratio(fcRSS, perDev))
	t.add("  mosquitto RSS growth per device", "", num(growth)+" KiB", "")

	// Publish loads.
	sustained, batches, closed := b.specs()
	for _, spec := range []loadSpec{sustained, batches, closed} {
		r, err := b.runSpec(ctx, url, pid, nil, imeis, spec, "")
		if err != nil {
			return fmt.Errorf("%s: %w", spec.name, err)
		}
		var fc *loadResult
		for i := range b.ingestResults {
			if b.ingestResults[i].spec.name == spec.name {
				fc = &b.ingestResults[i]
			}
		}
		name := strings.ReplaceAll(spec.name, " ", "_")
		b.rep.figure("baseline", "mosquitto_"+name+"_msgs_per_s", r.m.rate(), "msgs/s")
		b.rep.figure("baseline", "mosquitto_"+name+"_ack_p99", ms(r.m.lat.p99), "ms")
		fcRate, fcP50, fcP99 := 0.0, 0.0, 0.0
		if fc != nil {
			fcRate, fcP50, fcP99 = fc.m.rate(), ms(fc.m.lat.p50), ms(fc.m.lat.p99)
		}
		t.add(spec.name+": acked msgs/s", num(fcRate), num(r.m.rate()), ratio(fcRate, r.m.rate()))
		t.add(spec.name+": ack p50 / p99 ms", num(fcP50)+" / "+num(fcP99), num(ms(r.m.lat.p50))+" / "+num(ms(r.m.lat.p99)),
			ratio(fcP50, ms(r.m.lat.p50))+" / "+ratio(fcP99, ms(r.m.lat.p99)))
		t.add(spec.name+": server CPU", "", fmt.Sprintf("%.2f cores", r.srvCores), "")
		if r.errors > 0 {
			t.note("%s against mosquitto: %d errors", spec.name, r.errors)
		}
		if spec.name == "closed loop" && fc != nil {
			b.rep.figure("baseline", "closed_loop_ratio", fcRate/r.m.rate(), "×")
		}
	}
	if b.holdResult == nil || len(b.ingestResults) == 0 {
		t.note("fleetcam figures come from the hold and ingest parts of the same run; run them for the ratios")
	} else {
		t.note("fleetcam figures: the hold and ingest parts of this run on bbolt")
	}
	t.note("mosquitto acknowledges before anything reaches the disk (it saves its database every %s and at exit); fleetcam after fsync",
		"autosave_interval (1800s)")
	t.note("mosquitto: loopback port %s, configuration %s", strconv.Quote(m.addr), filepath.Join(dir, "mosquitto.conf"))
	b.rep.table(t)
	return nil
}
