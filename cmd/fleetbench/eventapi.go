package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcam/fleetcam/devicesim"
)

// eventPage is the part of an event list answer the bench checks.
type eventPage struct {
	Data     []struct{ ID int64 } `json:"data"`
	Metadata struct {
		Count int `json:"count"`
	} `json:"metadata"`
}

// eventQuery is one request of the API load.
type eventQuery struct {
	name string
	do   func(ctx context.Context, rnd *rand.Rand) (int, int, error) // status, page length
}

// api measures 100-event pages of both event endpoints with apiEvents
// events stored and ingest running, and the start-up time with that store.
func (b *bench) api(ctx context.Context) error {
	sc := b.sc
	fl, err := b.seeded(ctx, "api", sc.apiDevices)
	if err != nil {
		return err
	}
	defer b.dropStorage(ctx, fl.st)
	end := time.Now().UTC().Truncate(time.Hour)
	t0 := time.Now()
	if err := seedEvents(ctx, fl, sc.apiEvents, sc.apiDays, end, b.log); err != nil {
		return err
	}
	seedTook := time.Since(t0)
	fmt.Fprintf(b.log, "  seeded %d events in %s\n", sc.apiEvents, seedTook.Round(time.Millisecond))
	if err := b.settleStore(ctx, fl.st); err != nil {
		return err
	}
	srv, err := b.start(ctx, fl.st)
	if err != nil {
		return err
	}
	defer srv.stop()
	api, err := newAPIClient(ctx, srv)
	if err != nil {
		return err
	}
	iso := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
	first := end.Add(-time.Duration(sc.apiDays) * 24 * time.Hour)
	device := eventQuery{name: "GET /v2/devices/{imei}/events", do: func(ctx context.Context, rnd *rand.Rand) (int, int, error) {
		imei := fl.imeis[rnd.IntN(len(fl.imeis))]
		q := url.Values{"start": {iso(first)}, "end": {iso(end)}, "limit": {"100"}, "offset": {"0"}}
		var p eventPage
		st, err := api.call(ctx, http.MethodGet, "/v2/devices/"+imei+"/events?"+q.Encode(), nil, &p)
		return st, len(p.Data), err
	}}
	orgPath := fmt.Sprintf("/v2/organizations/%d/events", fl.orgID)
	org := eventQuery{name: "POST /v2/organizations/{orgId}/events (1 day)", do: func(ctx context.Context, rnd *rand.Rand) (int, int, error) {
		day := first.Add(time.Duration(rnd.IntN(sc.apiDays)) * 24 * time.Hour)
		var p eventPage
		st, err := api.call(ctx, http.MethodPost, orgPath, map[string]any{"start": iso(day), "end": iso(day.Add(24 * time.Hour)),
			"limit": 100, "offset": 0}, &p)
		return st, len(p.Data), err
	}}
	orgAll := eventQuery{name: fmt.Sprintf("POST /v2/organizations/{orgId}/events (%d days)", sc.apiDays), do: func(ctx context.Context, rnd *rand.Rand) (int, int, error) {
		var p eventPage
		st, err := api.call(ctx, http.MethodPost, orgPath, map[string]any{"start": iso(first), "end": iso(end),
			"limit": 100, "offset": 0}, &p)
		return st, len(p.Data), err
	}}
	// The event API may not be part of this build.
	if st, _, err := device.do(ctx, rand.New(rand.NewPCG(1, 2))); err != nil || st == http.StatusNotFound {
		b.rep.figure("api", "startup_seconds", srv.startup.Seconds(), "s")
		b.rep.skip("api", fmt.Sprintf("GET /v2/devices/{imei}/events answered %d (%v): the event API is not in this build; start-up with %d events took %s",
			st, err, sc.apiEvents, srv.startup.Round(time.Millisecond)))
		return nil
	}

	fr, err := startFleet(ctx, devicesim.LoadOptions{
		BrokerURL: srv.brokerURL(), IMEIs: fl.imeis, TokenSeed: benchTokenSeed, ConnectConcurrency: 256,
		KeepAlive: 300 * time.Second, GPSInterval: time.Duration(float64(time.Second) / sc.apiIngestRate),
		EventInterval: 100 * time.Second,
	})
	if err != nil {
		return err
	}
	defer fr.stop()
	if err := fr.waitConnected(ctx, len(fl.imeis), 2*time.Minute, b.log); err != nil {
		return err
	}
	if err := sleep(ctx, sc.warmup); err != nil {
		return err
	}
	// The pages are warmed up as the ingest was: the first requests on
	// each connection of the server's pool build its plans and caches,
	// which a running server has long done; the window measures after.
	if _, err := b.queryLoad(ctx, []eventQuery{device, org}, sc.apiRate, sc.warmup); err != nil {
		return err
	}
	b.profile(ctx, srv, sc.apiWindow, "api")
	cpu := startCPU(srv.cmd.Process.Pid)
	if fl.st.engine == enginePostgres {
		cpu.alsoTree(b.pg.pid())
	}
	res, err := b.queryLoad(ctx, []eventQuery{device, org}, sc.apiRate, sc.apiWindow)
	if err != nil {
		return err
	}
	srvCores, localCores := cpu.cores()
	pgCores, pgMeasured := cpu.treeCores()
	// The widest window, sequentially: its count walks every stored event.
	wide, err := b.queryLoad(ctx, []eventQuery{orgAll}, 0, min(sc.apiWindow/4, 5*time.Second))
	if err != nil {
		return err
	}
	res = append(res, wide...)
	ingest := fr.stats.Snapshot()

	t := &table{title: fmt.Sprintf("4. Event API: 100-event pages, %d events stored (%d devices, %d days), ingest running", sc.apiEvents, len(fl.imeis), sc.apiDays),
		cols: []string{"request", "rate", "requests", "p50", "p99", "max", "errors", "target"}}
	for i, r := range res {
		verdict := ""
		if i < 2 {
			verdict = b.rep.target("api", fmt.Sprintf("%s_p99", []string{"device_events", "org_events"}[i]), ms(r.lat.p99), "ms", false, 20)
			b.rep.figure("api", fmt.Sprintf("%s_p50", []string{"device_events", "org_events"}[i]), ms(r.lat.p50), "ms")
		} else {
			b.rep.figure("api", "org_events_all_days_p99", ms(r.lat.p99), "ms")
		}
		rate := num(r.rate) + "/s"
		if r.sequential {
			rate = "one at a time"
		}
		t.add(r.name, rate, strconv.Itoa(r.lat.n), msf(r.lat.p50), msf(r.lat.p99), msf(r.lat.max), strconv.Itoa(r.errors), verdict)
	}
	b.rep.figure("api", "startup_seconds", srv.startup.Seconds(), "s")
	t.note("start-up with this store: %s (process start to listening); events seeded in %s", srv.startup.Round(time.Millisecond), seedTook.Round(time.Millisecond))
	t.note("ingest meanwhile: %d devices × %g GPS messages/s, %d acknowledged in all", len(fl.imeis), sc.apiIngestRate, ingest.Published)
	cpuNote := fmt.Sprintf("CPU during the paced load: fleetcam %.2f cores, fleetbench (devices and requests) %.2f", srvCores, localCores)
	if pgMeasured {
		cpuNote += fmt.Sprintf(", PostgreSQL %.2f", pgCores)
		b.rep.figure("api", "postgres_cores", pgCores, "cores")
	}
	t.note("%s", cpuNote)
	t.note("device pages cover the whole %d days (their count walks the device's index entries); organization pages one random day, then all %d days (counted from hourly counts)", sc.apiDays, sc.apiDays)
	b.rep.table(t)
	return nil
}

// queryResult is one request kind's figures.
type queryResult struct {
	name       string
	rate       float64
	sequential bool
	lat        latency
	errors     int
}

// queryLoad sends the queries in turn at rate requests per second for d
// (rate 0: one at a time, back to back) and returns their latencies.
func (b *bench) queryLoad(ctx context.Context, qs []eventQuery, rate float64, d time.Duration) ([]queryResult, error) {
	var (
		mu     sync.Mutex
		lat    = make([][]time.Duration, len(qs))
		errs   = make([]int, len(qs))
		wg     sync.WaitGroup
		inUse  atomic.Int64
		behind int
	)
	one := func(i int, seed uint64) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		began := time.Now()
		st, n, err := qs[i].do(ctx, rnd)
		took := time.Since(began)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || st != http.StatusOK || n == 0 {
			errs[i]++
			return
		}
		lat[i] = append(lat[i], took)
	}
	deadline := time.Now().Add(d)
	if rate <= 0 {
		for n := uint64(0); time.Now().Before(deadline) && ctx.Err() == nil; n++ {
			one(int(n)%len(qs), n)
		}
	} else {
		every := time.Duration(float64(time.Second) / rate)
		next := time.Now()
		for n := uint64(0); time.Now().Before(deadline); n++ {
			if err := sleep(ctx, time.Until(next)); err != nil {
				return nil, err
			}
			next = next.Add(every)
			if inUse.Load() >= 256 {
				behind++
				continue
			}
			wg.Add(1)
			inUse.Add(1)
			go func(n uint64) {
				defer wg.Done()
				defer inUse.Add(-1)
				one(int(n)%len(qs), n)
			}(n)
		}
		wg.Wait()
	}
	out := make([]queryResult, len(qs))
	for i, q := range qs {
		out[i] = queryResult{name: q.name, rate: rate / float64(len(qs)), sequential: rate <= 0, lat: percentiles(lat[i]), errors: errs[i]}
		if i == 0 {
			out[i].errors += behind
		}
	}
	return out, nil
}
