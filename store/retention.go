package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Retention: each organization's purge days (Retention.PurgeDays) bound how
// long its GPS, events, media, trips, driver sessions and audit entries stay
// in the cloud; the purge days of each camera bound its media files' bytes
// and ADAS calibration images go after the general purge days
// (mediaretention.go). Purge deletes what is older in small batches, one
// short write transaction each, so device ingest waits for at most one batch.
// Closed alarms are kept AlarmRetentionDays whatever the organization says;
// data usage is kept DataUsageRetentionDays; finished webhook deliveries
// (the delivery log) are kept PurgeSettings.WebhookDeliveryDays after they
// finished, for every organization alike.

// AlarmRetentionDays is how long a closed alarm is kept.
const AlarmRetentionDays = 45

// DataUsageRetentionDays is how long a data usage period is kept.
const DataUsageRetentionDays = 400

// DefaultPurgeBatch is how many records one purge transaction deletes at most.
const DefaultPurgeBatch = 500

// DefaultWebhookDeliveryDays is how long a finished webhook delivery is
// kept when the settings do not say.
const DefaultWebhookDeliveryDays = 30

// PurgeSettings are the limits of a purge that do not come from the
// organizations.
type PurgeSettings struct {
	// Batch bounds the records one transaction deletes (DefaultPurgeBatch when 0).
	Batch int
	// WebhookDeliveryDays is how long a finished webhook delivery stays in
	// the delivery log after it finished (DefaultWebhookDeliveryDays when 0).
	WebhookDeliveryDays int
}

// purgeKind is one kind of data the purge deletes.
type purgeKind struct {
	name string
	// days picks the organization's limit for this kind (0: keep forever).
	days func(o *Organization) int
	// step deletes up to limit records older than their organization's
	// cutoff, starting at the resume position from, and returns how many
	// it deleted and where to resume (nil: done).
	step func(tx *Tx, cut Cutoffs, from []byte, limit int) (int, []byte, error)
}

// Cutoffs maps an organization to the time before which its data goes.
type Cutoffs map[int64]time.Time

// purgeKinds lists everything the purge covers, in order. Each step is in
// the file of the records it purges.
var purgeKinds = []purgeKind{
	{name: "events", days: generalPurgeDays, step: dropEventPartitions},
	{name: "events", days: generalPurgeDays, step: purgeEvents},
	{name: "media", days: frontCameraPurgeDays, step: mediaPurger(mediaClassFront)},
	{name: "media", days: rearCameraPurgeDays, step: mediaPurger(mediaClassRear)},
	{name: "media", days: auxCameraPurgeDays, step: mediaPurger(mediaClassAux)},
	{name: "adasImages", days: generalPurgeDays, step: mediaPurger(mediaClassUnattached)},
	{name: "gps", days: generalPurgeDays, step: dropGPSPartitions},
	{name: "gps", days: generalPurgeDays, step: purgeGPS},
	{name: "trips", days: generalPurgeDays, step: purgeTrips},
	{name: "driverSessions", days: generalPurgeDays, step: purgeDriverSessions},
	{name: "auditLogs", days: generalPurgeDays, step: purgeAudit},
	{name: "alarms", days: func(*Organization) int { return AlarmRetentionDays }, step: purgeAlarms},
	{name: "dataUsage", days: func(*Organization) int { return DataUsageRetentionDays }, step: purgeDataUsage},
}

func generalPurgeDays(o *Organization) int { return o.Retention.PurgeDays }

// OwnerCutoffs are the cutoffs that apply to one device's records: those
// of the organization of each of its ownerships.
type OwnerCutoffs struct {
	cut  Cutoffs
	orgs map[int64]int64 // ownership → organization
	// latest is the latest of the cutoffs; zero when none applies.
	latest time.Time
}

func (tx *Tx) ownerCutoffs(imei string, cut Cutoffs) (*OwnerCutoffs, error) {
	orgs, err := tx.ownershipOrgs(imei)
	if err != nil {
		return nil, err
	}
	oc := &OwnerCutoffs{cut: cut, orgs: orgs}
	for _, org := range orgs {
		if t, ok := cut[org]; ok && t.After(oc.latest) {
			oc.latest = t
		}
	}
	return oc, nil
}

// Latest is the latest of the cutoffs of the device's organizations: none
// of its records from then on is due. Zero when none applies.
func (oc *OwnerCutoffs) Latest() time.Time { return oc.latest }

// Purgeable reports whether a record of ownership recorded at at is due.
func (oc *OwnerCutoffs) Purgeable(ownership int64, at time.Time) bool {
	org, known := oc.orgs[ownership]
	t, ok := oc.cut[org]
	return known && ok && at.Before(t)
}

// SeriesPurge is one batch of a purge of a device series (GPS, trips,
// driver sessions, data usage) as the store asks an engine for it: the
// engine walks the series device by device from From, deletes each record
// that Owners says is due, at most Limit of them (every one when Limit is
// 0 or less), and returns how many it deleted and where to resume (nil
// when it reached the end).
type SeriesPurge struct {
	From  []byte
	Limit int
	// Owners returns the cutoffs of one device's records.
	Owners func(imei string) (*OwnerCutoffs, error)
}

// seriesPurge is the SeriesPurge of one batch of step.
func seriesPurge(tx *Tx, cut Cutoffs, from []byte, limit int) SeriesPurge {
	owners := map[string]*OwnerCutoffs{}
	return SeriesPurge{From: from, Limit: limit, Owners: func(imei string) (*OwnerCutoffs, error) {
		if oc, ok := owners[imei]; ok {
			return oc, nil
		}
		oc, err := tx.ownerCutoffs(imei, cut)
		if err != nil {
			return nil, err
		}
		owners[imei] = oc
		return oc, nil
	}}
}

// PurgeResult counts what one purge deleted, by kind, and its transactions.
type PurgeResult struct {
	Deleted      map[string]int
	Transactions int
}

// Purge deletes every record older than its retention at now, in
// transactions of at most s.Batch records. It stops early, with what it did
// so far, when ctx ends.
func (db *DB) Purge(ctx context.Context, now time.Time, s PurgeSettings) (PurgeResult, error) {
	batch := s.Batch
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	deliveryDays := s.WebhookDeliveryDays
	if deliveryDays <= 0 {
		deliveryDays = DefaultWebhookDeliveryDays
	}
	kinds := append(slices.Clip(purgeKinds), purgeKind{name: "webhookDeliveries",
		days: func(*Organization) int { return deliveryDays }, step: purgeDeliveries})
	res := PurgeResult{Deleted: map[string]int{}}
	var orgs []Organization
	if err := db.View(ctx, func(tx *Tx) error {
		var err error
		// A deleted organization's purge days still apply to what its
		// former devices recorded there, until it is all purged.
		orgs, _, err = tx.Organizations(OrganizationFilter{WithDeleted: true}, Page{})
		return err
	}); err != nil {
		return res, err
	}
	for _, k := range kinds {
		cut := Cutoffs{}
		for i := range orgs {
			if d := k.days(&orgs[i]); d > 0 {
				cut[orgs[i].ID] = now.AddDate(0, 0, -d)
			}
		}
		if len(cut) == 0 {
			continue
		}
		var from []byte
		for {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			var n int
			err := db.Update(ctx, Actor{Source: "retention"}, func(tx *Tx) error {
				var err error
				n, from, err = k.step(tx, cut, from, batch)
				return err
			})
			res.Transactions++
			if err != nil {
				return res, fmt.Errorf("store: purge %s: %w", k.name, err)
			}
			res.Deleted[k.name] += n
			if from == nil {
				break
			}
		}
	}
	return res, nil
}

// latest is the newest cutoff: nothing newer is purged for anyone.
func (c Cutoffs) Latest() time.Time {
	var t time.Time
	for _, x := range c {
		if x.After(t) {
			t = x
		}
	}
	return t
}

// PurgerOptions configure the background purge.
type PurgerOptions struct {
	Interval time.Duration
	Batch    int
	// WebhookDeliveryDays is how long finished webhook deliveries are kept
	// (DefaultWebhookDeliveryDays when 0).
	WebhookDeliveryDays int
	Logger              *slog.Logger
	// Registerer receives the fleetcam_retention_* metrics; nil: not registered.
	Registerer prometheus.Registerer
	// Purged, when set, is called after a run that deleted something: the
	// media trash it filled can be emptied now rather than at the media
	// service's next sweep. It must not block.
	Purged func()
}

// Purger runs Purge every interval and measures it.
type Purger struct {
	db   *DB
	opts PurgerOptions

	deleted  *prometheus.CounterVec
	runs     *prometheus.CounterVec
	duration prometheus.Histogram
	lastOK   prometheus.Gauge
}

// NewPurger builds the purge runner of db.
func NewPurger(db *DB, o PurgerOptions) *Purger {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Interval <= 0 {
		o.Interval = time.Hour
	}
	r := &Purger{db: db, opts: o,
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "fleetcam", Subsystem: "retention",
			Name: "deleted_total", Help: "Records deleted by the retention purge, by kind."}, []string{"kind"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "fleetcam", Subsystem: "retention",
			Name: "runs_total", Help: "Retention purge runs by result (ok, error)."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "fleetcam", Subsystem: "retention",
			Name: "run_duration_seconds", Help: "Duration of one retention purge run.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300}}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "fleetcam", Subsystem: "retention",
			Name: "last_success_timestamp_seconds", Help: "Unix time the last purge run completed."}),
	}
	// Both results are exported from the start: the first failed run is
	// then an increase of a series an alert already watches.
	r.runs.WithLabelValues("ok")
	r.runs.WithLabelValues("error")
	if o.Registerer != nil {
		o.Registerer.MustRegister(r.deleted, r.runs, r.duration, r.lastOK)
	}
	return r
}

// RunOnce purges once at the store clock's now.
func (r *Purger) RunOnce(ctx context.Context) (PurgeResult, error) {
	start := time.Now()
	if m, ok := r.db.engine.(Maintainer); ok {
		if err := m.Maintain(ctx, r.db.Now()); err != nil {
			r.runs.WithLabelValues("error").Inc()
			r.opts.Logger.Error("storage maintenance failed", "err", err)
			return PurgeResult{}, err
		}
	}
	res, err := r.db.Purge(ctx, r.db.Now(), PurgeSettings{Batch: r.opts.Batch, WebhookDeliveryDays: r.opts.WebhookDeliveryDays})
	r.duration.Observe(time.Since(start).Seconds())
	for kind, n := range res.Deleted {
		r.deleted.WithLabelValues(MetricLabel(kind)).Add(float64(n))
	}
	if err != nil {
		r.runs.WithLabelValues("error").Inc()
		r.opts.Logger.Error("retention purge failed", "err", err)
		return res, err
	}
	r.runs.WithLabelValues("ok").Inc()
	r.lastOK.Set(float64(r.db.Now().Unix()))
	r.opts.Logger.Info("retention purge done", "deleted", res.Deleted, "transactions", res.Transactions)
	if len(res.Deleted) > 0 && r.opts.Purged != nil {
		r.opts.Purged()
	}
	return res, nil
}

// Run purges every interval until ctx ends.
func (r *Purger) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	for {
		r.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
