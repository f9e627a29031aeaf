package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// Sign-in endpoints, the endpoint label of the sign-in metrics.
const (
	endpointAuthenticate   = "authenticate"
	endpointSSO            = "sso"
	endpointResetPassword  = "reset_password"
	endpointChangePassword = "change_password"
	// OAuth clients' secrets, checked by POST /oauth/token and /oauth/introspect.
	endpointOAuthToken      = "oauth_token"
	endpointOAuthIntrospect = "oauth_introspect"
)

// Why a sign-in was refused, the reason label of fleetcam_auth_failures_total.
const (
	reasonBadCredentials   = "bad_credentials"
	reasonThrottledAccount = "throttled_account"
	reasonThrottledAddress = "throttled_address"
	reasonBusy             = "busy"
	reasonReplayed         = "replayed"
)

// signinGuard brakes the guessing of passwords, SSO JWTs and invitation
// tokens: per account and per client address (attemptThrottle), and by
// bounding the bcrypt work done at once (passwordChecker). Its state is
// in memory, per node.
type signinGuard struct {
	accounts  *attemptThrottle
	addresses *attemptThrottle
	failures  *prometheus.CounterVec
	lockouts  *prometheus.CounterVec
}

func newSigninGuard(cfg configs.Throttle, now func() time.Time, reg prometheus.Registerer) *signinGuard {
	g := &signinGuard{
		accounts:  newAttemptThrottle(cfg.AccountFreeAttempts, cfg.InitialBackoff, cfg.MaxBackoff, cfg.MaxEntries, now),
		addresses: newAttemptThrottle(cfg.AddressFreeAttempts, cfg.InitialBackoff, cfg.MaxBackoff, cfg.MaxEntries, now),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetcam", Subsystem: "auth", Name: "failures_total",
			Help: "Refused sign-ins by endpoint (authenticate, sso, reset_password, change_password, forgot_password, oauth_token, oauth_introspect) and reason (bad_credentials, throttled_account, throttled_address, busy, replayed).",
		}, []string{"endpoint", "reason"}),
		lockouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetcam", Subsystem: "auth", Name: "lockouts_total",
			Help: "Times an account or a client address used up its free sign-in attempts and was made to wait, by scope (account, address).",
		}, []string{"scope"}),
	}
	reg.MustRegister(g.failures, g.lockouts)
	return g
}

// admitSignin counts a sign-in attempt for the client's address and, when
// account is not empty, for the account, before any secret is checked. When
// either must wait it returns the 429 TooManyRequestsError to answer, with
// Retry-After set; the answer does not depend on whether the account exists.
func (s *Server) admitSignin(c *gin.Context, endpoint, account string) error {
	addr := clientAddress(c)
	wait, engaged := s.guard.addresses.admit(addr)
	if engaged {
		s.lockout(c, "address", addr)
	}
	if wait > 0 {
		return s.refuseSignin(c, endpoint, reasonThrottledAddress, wait)
	}
	if account == "" {
		return nil
	}
	wait, engaged = s.guard.accounts.admit(account)
	if engaged {
		s.lockout(c, "account", account)
	}
	if wait > 0 {
		// Refused without a check: not an attempt of this address.
		s.guard.addresses.refund(addr)
		return s.refuseSignin(c, endpoint, reasonThrottledAccount, wait)
	}
	return nil
}

// refuseSignin counts a sign-in refused for waiting and returns its 429,
// with Retry-After set.
func (s *Server) refuseSignin(c *gin.Context, endpoint, reason string, wait time.Duration) error {
	s.guard.failures.WithLabelValues(endpoint, reason).Inc()
	secs := int(math.Ceil(wait.Seconds()))
	c.Header("Retry-After", strconv.Itoa(secs))
	return apiErr(http.StatusTooManyRequests, nameTooManyRequests, "too many failed sign-in attempts; retry after %d s", secs)
}

// signinFailed counts a refused sign-in; its attempt stays counted.
func (s *Server) signinFailed(endpoint, reason string) {
	s.guard.failures.WithLabelValues(endpoint, reason).Inc()
}

// signinSucceeded frees the account and takes back the address's attempt.
func (s *Server) signinSucceeded(c *gin.Context, account string) {
	s.guard.addresses.refund(clientAddress(c))
	if account != "" {
		s.guard.accounts.forget(account)
	}
}

// signinUnchecked takes back the attempts of a sign-in whose secret was
// never checked (no free core, or the request ran out of time).
func (s *Server) signinUnchecked(c *gin.Context, account string) {
	s.guard.addresses.refund(clientAddress(c))
	if account != "" {
		s.guard.accounts.refund(account)
	}
}

// clientAddress is the address sign-ins are braked by: the client's IPv4
// address, or the /64 network of its IPv6 address, since one IPv6 host
// usually holds a whole /64.
func clientAddress(c *gin.Context) string {
	ip, err := netip.ParseAddr(c.ClientIP())
	if err != nil {
		return c.ClientIP()
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	return netip.PrefixFrom(ip, 64).Masked().String()
}

// lockout records that key used up its free attempts: once per engagement
// of the brake, in the log, the metrics and the audit log. An entry about
// an existing user or organization is its tenant's to read.
func (s *Server) lockout(c *gin.Context, scope, key string) {
	s.guard.lockouts.WithLabelValues(scope).Inc()
	s.log.Warn("sign-in attempts throttled", "requestId", requestID(c), "scope", scope, "key", key, "address", c.ClientIP())
	actor := store.Actor{Source: "system", RequestID: requestID(c)}
	// The brake is recorded even when the call runs out of time: a slow
	// sign-in must not hide the attempts from the audit log.
	err := s.store.Update(context.WithoutCancel(c.Request.Context()), actor, func(tx *store.Tx) error {
		change := store.AuditChange{Action: "auth.throttle", EntityType: scope, EntityID: key,
			Reason: fmt.Sprintf("free sign-in attempts used up (last from %s); further attempts must wait", c.ClientIP())}
		if email, found := strings.CutPrefix(key, "email:"); found {
			if u, err := tx.UserByEmail(email); err == nil {
				change.PartnerID, change.OrganizationID = u.PartnerID, u.OrganizationID
			}
		}
		if id, found := strings.CutPrefix(key, "organization:"); found {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				if o, err := tx.Organization(n); err == nil {
					change.PartnerID, change.OrganizationID = o.PartnerID, o.ID
				}
			}
		}
		return tx.Audit(change)
	})
	if err != nil {
		s.log.Error("audit of a sign-in throttle failed", "requestId", requestID(c), "err", err)
	}
}

// errPasswordBusy is a password check that found no free core in time;
// answered with 429.
var errPasswordBusy = errors.New("cloudapi: every core is busy checking passwords")

// passwordChecker runs bcrypt on at most as many passwords at once as
// there are cores, so that sign-ins cannot take the CPU from device
// ingest. A check waits up to wait for a core, then fails with
// errPasswordBusy.
//
// Every check does the same bcrypt work, so that its time tells nothing of
// whether the account exists: an unknown account (or one with no password
// yet) is compared against a dummy hash, and a stored hash of a lower cost
// than the others (made under an older auth.bcryptCost, or by a seeding
// tool) is topped up with dummy comparisons to the same work. bcrypt's work
// doubles with each step of cost, so a hash of cost h plus dummies of costs
// h to c-1 is the work of one hash of cost c. c is auth.bcryptCost, raised
// to the cost of any stored hash checked that is higher.
type passwordChecker struct {
	slots chan struct{}
	wait  time.Duration
	cost  int
	// ceiling is the cost every check does the work of.
	ceiling atomic.Int32
	// compareHash is bcrypt.CompareHashAndPassword; tests count its work.
	compareHash func(hash, password []byte) error
}

func newPasswordChecker(cost int, wait time.Duration) (*passwordChecker, error) {
	p := &passwordChecker{slots: make(chan struct{}, runtime.GOMAXPROCS(0)), wait: wait, cost: cost,
		compareHash: bcrypt.CompareHashAndPassword}
	p.ceiling.Store(int32(cost))
	if _, err := p.dummy(cost); err != nil {
		return nil, err
	}
	return p, nil
}

// dummies are the hashes of a fixed password by cost, made on first use
// and shared by every checker of the process: which salt a dummy has does
// not matter, only its cost, and a hash of the default cost takes a
// sizeable fraction of a core-second to make.
var dummies struct {
	mu     sync.Mutex
	byCost map[int][]byte
}

// dummy returns the dummy hash of the given cost, made on first use.
func (p *passwordChecker) dummy(cost int) ([]byte, error) {
	dummies.mu.Lock()
	defer dummies.mu.Unlock()
	if h, ok := dummies.byCost[cost]; ok {
		return h, nil
	}
	h, err := bcrypt.GenerateFromPassword([]byte("fleetcam-timing-equaliser"), cost)
	if err != nil {
		return nil, err
	}
	if dummies.byCost == nil {
		dummies.byCost = map[int][]byte{}
	}
	dummies.byCost[cost] = h
	return h, nil
}

// run runs fn on a free core.
func (p *passwordChecker) run(ctx context.Context, fn func()) error {
	timer := time.NewTimer(p.wait)
	defer timer.Stop()
	select {
	case p.slots <- struct{}{}:
	case <-timer.C:
		return errPasswordBusy
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.slots }()
	fn()
	return nil
}

// compare reports whether password matches hash; a nil hash (unknown
// account, or no password set yet) never matches. Either way the check
// does the work of one hash of the ceiling's cost.
func (p *passwordChecker) compare(ctx context.Context, hash []byte, password string) (bool, error) {
	match := false
	var derr error
	err := p.run(ctx, func() {
		ceiling := int(p.ceiling.Load())
		// The dummies to compare against: costs lo to hi-1.
		lo, hi := ceiling, ceiling+1
		if hash != nil {
			match = p.compareHash(hash, []byte(password)) == nil
			if cost, err := bcrypt.Cost(hash); err == nil {
				if cost > ceiling {
					// The next unknown account does as much work as this one.
					p.raise(cost)
				}
				lo, hi = cost, ceiling
			}
		}
		for c := lo; c < hi; c++ {
			d, err := p.dummy(c)
			if err != nil {
				derr = err
				return
			}
			p.compareHash(d, []byte(password))
		}
	})
	if err == nil {
		err = derr
	}
	return match, err
}

// raise lifts the ceiling to cost unless it is already as high.
func (p *passwordChecker) raise(cost int) {
	for {
		c := p.ceiling.Load()
		if int32(cost) <= c || p.ceiling.CompareAndSwap(c, int32(cost)) {
			return
		}
	}
}

// hash returns the bcrypt hash of password at the configured cost.
func (p *passwordChecker) hash(ctx context.Context, password string) ([]byte, error) {
	var hash []byte
	var herr error
	if err := p.run(ctx, func() { hash, herr = bcrypt.GenerateFromPassword([]byte(password), p.cost) }); err != nil {
		return nil, err
	}
	return hash, herr
}
