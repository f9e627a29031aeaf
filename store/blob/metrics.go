package blob

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Observed is a Store that counts the operations of another by kind and
// result and times them: fleetcam_media_store_operations_total and
// fleetcam_media_store_operation_duration_seconds. A put's time includes
// reading its bytes from the uploading device.
type Observed struct {
	store    Store
	ops      *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// Results of operations, the result label.
const (
	resultOK       = "ok"
	resultNotFound = "not_found"
	resultError    = "error"
	// resultSourceError: a put failed because its bytes could not be read
	// (the device's upload broke off, or was too large), not because of
	// the store.
	resultSourceError = "source_error"
)

// Observe wraps s, registering its metrics with reg; kind ("dir", "s3")
// labels them.
func Observe(s Store, kind string, reg prometheus.Registerer) (*Observed, error) {
	labels := prometheus.Labels{"store": kind}
	o := &Observed{store: s,
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "fleetcam", Subsystem: "media_store",
			Name: "operations_total", ConstLabels: labels,
			Help: "Operations of the media store (put, get, delete) by result: ok, not_found, error (of the store), " +
				"source_error (a put whose bytes could not be read: the upload broke off)."},
			[]string{"operation", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "fleetcam", Subsystem: "media_store",
			Name: "operation_duration_seconds", ConstLabels: labels,
			Help:    "Duration of operations of the media store; a put's includes receiving the upload.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}},
			[]string{"operation"}),
	}
	for _, c := range []prometheus.Collector{o.ops, o.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series exists from the start, so that rates and alerts see
	// zeros rather than nothing.
	for _, op := range []string{"put", "get", "delete"} {
		o.duration.WithLabelValues(op)
		for _, r := range []string{resultOK, resultError} {
			o.ops.WithLabelValues(op, r)
		}
	}
	o.ops.WithLabelValues("get", resultNotFound)
	o.ops.WithLabelValues("put", resultSourceError)
	return o, nil
}

// observe records one operation that started at start and ended with
// result.
func (o *Observed) observe(op string, start time.Time, result string) {
	o.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	o.ops.WithLabelValues(op, result).Inc()
}

func result(err error) string {
	switch {
	case err == nil:
		return resultOK
	case errors.Is(err, ErrNotFound):
		return resultNotFound
	}
	return resultError
}

// Put stores the blob as the wrapped store does.
func (o *Observed) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	start := time.Now()
	src := &sourceReader{r: r}
	n, err := o.store.Put(ctx, key, src)
	res := result(err)
	if err != nil && (src.err != nil || ctx.Err() != nil) {
		res = resultSourceError
	}
	o.observe("put", start, res)
	return n, err
}

// sourceReader remembers the first error of reading the bytes to store,
// so that a failed put tells the uploader's failures from the store's.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// Get opens the blob as the wrapped store does; the reads that follow
// are not timed.
func (o *Observed) Get(ctx context.Context, key string) (Object, error) {
	start := time.Now()
	obj, err := o.store.Get(ctx, key)
	o.observe("get", start, result(err))
	return obj, err
}

// Delete removes the blob as the wrapped store does.
func (o *Observed) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := o.store.Delete(ctx, key)
	o.observe("delete", start, result(err))
	return err
}
