package main

import "time"

// scale sizes every part; fullScale is the size the performance targets are set for, quickScale a tiny one.
type scale struct {
	// hold
	holdDevices int
	holdSettle  time.Duration
	// ingest (and the baseline's loads)
	ingestDevices   int
	sustainedGPS    float64 // GPS messages per second per device (one fix each)
	sustainedEvents float64 // events per second per device
	batchFixes      int     // fixes per GPS message in the batch stage (one message per second)
	closedDevices   int
	warmup          time.Duration
	window          time.Duration
	// webhook
	webhookDevices int
	webhookRates   []float64 // events per second, fleet-wide
	webhookWindow  time.Duration
	// api
	apiEvents     int
	apiDevices    int
	apiDays       int
	apiRate       float64 // requests per second, both endpoints together
	apiWindow     time.Duration
	apiIngestRate float64 // GPS messages per second per device while querying
	// durability
	durabilityRuns    int
	durabilityDevices int
	durabilityLoad    time.Duration
	// purge: days of history, the oldest of which is due
	purgeDevices      int
	purgeDays         int
	purgeGPSEvery     time.Duration // between a device's GPS samples
	purgeEventsPerDay int           // per device
	// cluster (-cluster): devices spread over the nodes, their events per
	// second fleet-wide, and commands timed across nodes
	clusterDevices   int
	clusterEventRate float64
	clusterCommands  int
	// pgMaxConns is store.maxConns of fleetcam on PostgreSQL; 0: its
	// default. A server opens and warms its pools in full as it starts, and
	// a tiny load is served as well by a few connections.
	pgMaxConns int
}

var fullScale = scale{
	holdDevices: 10000, holdSettle: 5 * time.Second,
	ingestDevices: 1000, sustainedGPS: 5, sustainedEvents: 0.01, batchFixes: 60, closedDevices: 100,
	warmup: 3 * time.Second, window: 8 * time.Second,
	webhookDevices: 1000, webhookRates: []float64{10, 100}, webhookWindow: 20 * time.Second,
	apiEvents: 1_000_000, apiDevices: 1000, apiDays: 30, apiRate: 200, apiWindow: 20 * time.Second, apiIngestRate: 1,
	durabilityRuns: 5, durabilityDevices: 100, durabilityLoad: 3 * time.Second,
	// 1.44 million GPS samples and 40,000 events: a few minutes of seeding
	// on PostgreSQL, whose engine stores a sample per statement.
	purgeDevices: 1000, purgeDays: 2, purgeGPSEvery: 2 * time.Minute, purgeEventsPerDay: 20,
	clusterDevices: 1000, clusterEventRate: 50, clusterCommands: 200,
}

var quickScale = scale{
	// A few hundred devices: with 4 KiB of heap each, a hundred were within
	// the collector's noise and could report a negative heap per device.
	holdDevices: 500, holdSettle: 200 * time.Millisecond,
	ingestDevices: 40, sustainedGPS: 5, sustainedEvents: 0.5, batchFixes: 20, closedDevices: 10,
	warmup: 500 * time.Millisecond, window: 500 * time.Millisecond,
	webhookDevices: 20, webhookRates: []float64{10}, webhookWindow: time.Second,
	apiEvents: 3000, apiDevices: 20, apiDays: 2, apiRate: 50, apiWindow: time.Second, apiIngestRate: 1,
	durabilityRuns: 1, durabilityDevices: 10, durabilityLoad: 500 * time.Millisecond,
	purgeDevices: 5, purgeDays: 2, purgeGPSEvery: 10 * time.Minute, purgeEventsPerDay: 20,
	clusterDevices: 60, clusterEventRate: 20, clusterCommands: 20,
	pgMaxConns: 6,
}
