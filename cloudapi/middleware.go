package cloudapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	headKey             // set on a HEAD request answered as GET
)

// headAsGet answers HEAD as GET, as HTTP asks of every server (RFC 9110,
// 9.3.2): the route's GET handler runs and net/http, which still sees the
// request as HEAD, sends its headers and drops its body. Error answers name
// the method the client sent (requestMethod).
func headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			r = r.WithContext(context.WithValue(r.Context(), headKey, true))
			r.Method = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

// requestMethod is the method the client sent: HEAD for a HEAD request
// headAsGet answers as GET.
func requestMethod(r *http.Request) string {
	if head, _ := r.Context().Value(headKey).(bool); head {
		return http.MethodHead
	}
	return r.Method
}

// newRequestID returns a random UUID-shaped id.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// requestID returns the id of the request, set by withTimeout.
func requestID(c *gin.Context) string {
	id, _ := c.Request.Context().Value(requestIDKey).(string)
	return id
}

// withTimeout gives every request an id (X-Request-Id) and a deadline. A
// handler still running at the deadline is answered with a JSON 503
// TimeoutError instead of a dropped connection; its late writes are discarded.
func (s *Server) withTimeout(next http.Handler, limit time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), requestIDKey, id), limit)
		defer cancel()
		if isStream(r) {
			// Streams (uploads, live video, media downloads) are bounded by
			// the stream deadline on the connection, not the API call limit
			// and the server's read and write timeouts.
			rc := http.NewResponseController(w)
			deadline := time.Now().Add(s.cfg.HTTP.StreamTimeout)
			_ = rc.SetReadDeadline(deadline)
			_ = rc.SetWriteDeadline(deadline)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
			return
		}
		tw := &timeoutWriter{header: w.Header().Clone()}
		done := make(chan struct{})
		panicked := make(chan any, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					panicked <- p
				}
				close(done)
			}()
			next.ServeHTTP(tw, r.WithContext(ctx))
		}()
		select {
		case <-done:
			select {
			case p := <-panicked:
				panic(p)
			default:
			}
			tw.mu.Lock()
			defer tw.mu.Unlock()
			dst := w.Header()
			for k, v := range tw.header {
				dst[k] = v
			}
			if tw.code == 0 {
				tw.code = http.StatusOK
			}
			w.WriteHeader(tw.code)
			w.Write(tw.buf.Bytes())
		case <-ctx.Done():
			tw.mu.Lock()
			defer tw.mu.Unlock()
			tw.timedOut = true
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			body, _ := json.Marshal(errorBody{Error: nameTimeout, RequestID: id,
				Message: "the request did not complete within " + limit.String() + "; paginate large retrievals with limit and offset"})
			w.Write(body)
			s.metrics.timeouts.Inc()
		}
	})
}

// streamPrefix marks routes that stream and so are not buffered by withTimeout.
const streamPrefix = "/v2/media/"

func isStream(r *http.Request) bool {
	return len(r.URL.Path) >= len(streamPrefix) && r.URL.Path[:len(streamPrefix)] == streamPrefix
}

// timeoutWriter buffers a response so that a timed-out request can still be
// answered cleanly.
type timeoutWriter struct {
	mu       sync.Mutex
	header   http.Header
	buf      bytes.Buffer
	code     int
	timedOut bool
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	if tw.code == 0 {
		tw.code = http.StatusOK
	}
	return tw.buf.Write(p)
}

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut || tw.code != 0 {
		return
	}
	tw.code = code
}

// recover turns a handler panic into a 500 UnknownError and logs it.
func (s *Server) recover(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("handler panic", "requestId", requestID(c), "route", c.FullPath(), "panic", p)
			s.fail(c, apiErr(http.StatusInternalServerError, nameUnknown, "unknown error has occurred"))
		}
	}()
	c.Next()
}

// limitBody caps request bodies at the configured size. Media routes
// (uploads, live frames) apply their own limits.
func (s *Server) limitBody(c *gin.Context) {
	if c.Request.Body != nil && !isStream(c.Request) {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.cfg.HTTP.MaxBodyBytes)
	}
	c.Next()
}

// httpMetrics are the API's Prometheus collectors.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	timeouts prometheus.Counter
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetcam", Subsystem: "http", Name: "requests_total",
			Help: "API requests by route, method and status code.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "fleetcam", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "API request latency by route, method and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method", "status"}),
		timeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "fleetcam", Subsystem: "http", Name: "timeouts_total",
			Help: "API requests answered with TimeoutError.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.timeouts)
	return m
}

// methodLabel is the method label of a request: one of the standard
// methods the API can route, else "other". Any client can send any method
// name, so the raw method would let it add series without bound.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// observe counts and times every request by route template (or
// "unmatched"), method and status, and logs it. Every label comes from a
// closed set.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := strconv.Itoa(c.Writer.Status())
	elapsed := time.Since(start)
	method := methodLabel(c.Request.Method)
	s.metrics.requests.WithLabelValues(route, method, status).Inc()
	s.metrics.duration.WithLabelValues(route, method, status).Observe(elapsed.Seconds())
	s.log.Debug("request", "requestId", requestID(c), "method", c.Request.Method, "route", route,
		"status", c.Writer.Status(), "elapsed", elapsed)
}
