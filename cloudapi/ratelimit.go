package cloudapi

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// callerLimits keeps one token bucket per caller: per token subject once
// authenticated, per client address for POST /authenticate. Buckets idle
// for longer than it takes them to refill are dropped on the next sweep.
type callerLimits struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*callerBucket
	lastSweep time.Time
}

type callerBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newCallerLimits(perSecond float64, burst int, now func() time.Time) *callerLimits {
	return &callerLimits{limit: rate.Limit(perSecond), burst: burst, now: now, buckets: map[string]*callerBucket{}}
}

// allow takes one request from key's bucket; when it is empty it reports how
// long until the next request would be allowed.
func (l *callerLimits) allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	idle := time.Duration(float64(l.burst)/float64(l.limit)*float64(time.Second)) + time.Minute
	if now.Sub(l.lastSweep) > idle {
		for k, b := range l.buckets {
			if now.Sub(b.seen) > idle {
				delete(l.buckets, k)
			}
		}
		l.lastSweep = now
	}
	b, found := l.buckets[key]
	if !found {
		b = &callerBucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// rateLimited answers 429 TooManyRequestsError with Retry-After (whole seconds).
func (s *Server) rateLimited(c *gin.Context, key string) bool {
	if s.limits == nil {
		return false
	}
	allowed, wait := s.limits.allow(key)
	if allowed {
		return false
	}
	secs := int(math.Ceil(wait.Seconds()))
	c.Header("Retry-After", strconv.Itoa(secs))
	s.fail(c, apiErr(http.StatusTooManyRequests, nameTooManyRequests,
		"too many requests; retry after %d s (the limit is %g requests per second per caller)", secs, float64(s.limits.limit)))
	return true
}

// limitByAddress applies the caller limit per client address, for calls made
// before there is a token.
func (s *Server) limitByAddress(c *gin.Context) {
	if s.rateLimited(c, "addr:"+c.ClientIP()) {
		return
	}
	c.Next()
}
