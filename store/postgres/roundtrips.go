package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// roundTrips counts what the engine sends the server: round trips (a
// statement on its own, or a batch of statements pipelined together) and
// the statements in them. It is the pgx tracer of every connection of the
// pool, and the engine exports its counts (Engine.Collect): the round trips
// a message or a connection costs are what bounds the engine's speed, and
// the figure tells a change that adds one.
type roundTrips struct {
	trips, statements atomic.Uint64
}

var (
	tripsDesc = prometheus.NewDesc("fleetcam_store_postgres_round_trips_total",
		"Round trips to PostgreSQL: a statement on its own, or a batch of statements pipelined together.", nil, nil)
	statementsDesc = prometheus.NewDesc("fleetcam_store_postgres_statements_total",
		"Statements sent to PostgreSQL, alone or in batches.", nil, nil)
)

// TraceQueryStart implements pgx.QueryTracer: one statement, one round trip.
func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.trips.Add(1)
	r.statements.Add(1)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer: the batch's statements in
// one round trip.
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	r.trips.Add(1)
	if d.Batch != nil {
		r.statements.Add(uint64(len(d.Batch.QueuedQueries)))
	}
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Describe implements prometheus.Collector.
func (e *Engine) Describe(ch chan<- *prometheus.Desc) {
	ch <- tripsDesc
	ch <- statementsDesc
}

// Collect implements prometheus.Collector: the round trips and statements
// sent since the engine opened.
func (e *Engine) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(tripsDesc, prometheus.CounterValue, float64(e.sent.trips.Load()))
	ch <- prometheus.MustNewConstMetric(statementsDesc, prometheus.CounterValue, float64(e.sent.statements.Load()))
}
