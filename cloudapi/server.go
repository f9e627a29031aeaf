// Package cloudapi is fleetcam's HTTP/JSON API under /v2: the route table,
// authentication and tenancy, handlers, error mapping and the OpenAPI
// document. It reaches the store through its methods and devices through
// the small Commander interface it declares.
package cloudapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/live"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Commander reaches devices. The broker implements it.
type Commander interface {
	// Send delivers a command to an online device and waits for its reply
	// (ErrDeviceOffline, ErrCommandTimeout).
	Send(ctx context.Context, imei, name string, args any) (json.RawMessage, error)
	// Enqueue stores a command in the caller's write transaction, so that
	// it commits with the change that causes it or not at all; once
	// committed it is delivered at once if the device is online, else when
	// it reconnects, until the device answers it.
	Enqueue(tx *store.Tx, imei, name string, args any) error
	// PushConfig delivers the device's current desired configuration now if
	// it is online; otherwise it goes on reconnect.
	PushConfig(imei string)
	// Online reports whether the device is connected.
	Online(imei string) bool
	// Disconnect ends the device's connection, if it has one (MQTT 5:
	// DISCONNECT 0x98), e.g. once it left the inventory.
	Disconnect(imei string)
}

// Deps are what the API needs from the rest of fleetcam.
type Deps struct {
	Config configs.Config
	Store  *store.DB
	// Key signs tokens and derives ssoSecrets; at least 32 bytes.
	Key       []byte
	Commander Commander
	Logger    *slog.Logger
	Registry  *prometheus.Registry
	// Registerer is where the API registers its metrics: Registry, or
	// Registry wrapped with constant labels (a cluster node's "node");
	// Registry when nil.
	Registerer prometheus.Registerer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Ready reports whether fleetcam is ready for traffic (GET /readyz).
	Ready func() bool
	// Presence reports devices' connections for device details; nil: every
	// device reads as offline.
	Presence Presence
	// Blobs keeps media bytes; the directory media.dir names when nil.
	Blobs blob.Store
	// MediaLinks hands out direct links to the blobs of Blobs: downloads
	// answer with a redirect to one instead of carrying the bytes. Nil:
	// fleetcam serves the bytes itself.
	MediaLinks MediaLinker
	// Cluster lists the live nodes (GET /v2/cluster) and tells whether the
	// other nodes can be reached (GET /readyz); nil: this node alone.
	Cluster Cluster
	// Relay carries live streams between the nodes of a cluster; nil on a
	// fleetcam alone.
	Relay Relay
}

// Server is the API. Build it with New and serve Handler.
type Server struct {
	cfg       configs.Config
	store     *store.DB
	key       []byte
	commander Commander
	log       *slog.Logger
	now       func() time.Time
	ready     func() bool
	metrics   *httpMetrics
	engine    *gin.Engine
	openapi   []byte
	presence  Presence
	cluster   Cluster
	// clipRequests is the number of the last virtual-event clip request
	// (nextClipRequest).
	clipRequests atomic.Int64
	// limits holds the per-caller request budgets; nil when rate limiting is off.
	limits *callerLimits
	// guard brakes sign-in guessing; passwords bounds the bcrypt work.
	guard     *signinGuard
	passwords *passwordChecker
	// ssoUsed holds the SSO JWTs already exchanged, until they expire.
	ssoUsed *usedTokens
	// resets counts the password reset e-mails still being recorded and sent.
	resets sync.WaitGroup
	// metricsHandler serves /metrics from the injected registry; on the API
	// listener unless metrics.addr gives it one of its own.
	metricsHandler http.Handler
	// Media: blob store, link signing key, upload requests, live streams.
	blobs    blob.Store
	links    MediaLinker
	mediaKey []byte
	mediaSvc *mediaService
	live     *live.Hub
	relay    Relay
}

// New builds the API and its route table.
func New(d Deps) (*Server, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if d.Registerer == nil {
		d.Registerer = d.Registry
	}
	if d.Ready == nil {
		d.Ready = func() bool { return true }
	}
	if d.Cluster == nil {
		d.Cluster = alone{id: d.Config.Cluster.NodeID, started: d.Now().UTC()}
	}
	s := &Server{cfg: d.Config, store: d.Store, key: d.Key, commander: d.Commander, log: d.Logger,
		now: d.Now, ready: d.Ready, metrics: newHTTPMetrics(d.Registerer), presence: d.Presence, cluster: d.Cluster,
		metricsHandler: promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{Registry: d.Registerer})}
	s.guard = newSigninGuard(d.Config.Auth.Throttle, d.Now, d.Registerer)
	pw, err := newPasswordChecker(d.Config.Auth.BcryptCost, d.Config.Auth.Throttle.PasswordWait)
	if err != nil {
		return nil, fmt.Errorf("cloudapi: auth.bcryptCost: %w", err)
	}
	s.passwords, s.ssoUsed = pw, newUsedTokens(d.Config.Auth.Throttle.MaxEntries)
	if d.Config.HTTP.RateLimit > 0 {
		s.limits = newCallerLimits(d.Config.HTTP.RateLimit, d.Config.HTTP.RateBurst, d.Now)
	}
	if d.Blobs == nil {
		dir, err := blob.NewDir(d.Config.MediaDir())
		if err != nil {
			return nil, err
		}
		if d.Blobs, err = blob.Observe(dir, "dir", d.Registerer); err != nil {
			return nil, err
		}
	}
	s.links = d.MediaLinks
	s.blobs, s.mediaKey, s.mediaSvc, s.relay = d.Blobs, deriveMediaKey(d.Key), newMediaService(s), d.Relay
	s.live = s.newLiveHub()
	if s.relay != nil {
		s.relay.HandleHeld(liveVerb, s.answerLiveOpen)
		if err := s.subscribeLiveSettings(); err != nil {
			return nil, err
		}
	}
	doc, err := servedOpenAPI()
	if err != nil {
		return nil, err
	}
	s.openapi = doc
	gin.SetMode(gin.ReleaseMode)
	s.engine = gin.New()
	s.engine.HandleMethodNotAllowed = true
	// Client addresses (rate limits, login throttles) come from the
	// connection unless it is from a configured proxy.
	if err := s.engine.SetTrustedProxies(d.Config.HTTP.TrustedProxies); err != nil {
		return nil, fmt.Errorf("cloudapi: http.trustedProxies: %w", err)
	}
	s.engine.NoRoute(func(c *gin.Context) { s.fail(c, notFound("route "+requestMethod(c.Request)+" "+c.Request.URL.Path)) })
	s.engine.NoMethod(func(c *gin.Context) {
		// gin lists the route's methods in Allow; a GET route answers HEAD too.
		if allow := c.Writer.Header().Get("Allow"); slices.Contains(strings.Split(allow, ", "), http.MethodGet) {
			c.Header("Allow", allow+", "+http.MethodHead)
		}
		s.fail(c, apiErr(http.StatusMethodNotAllowed, nameMethodNotAllowed, "method %s is not allowed on %s",
			requestMethod(c.Request), c.Request.URL.Path))
	})
	s.engine.Use(s.recover, s.observe, s.limitBody)
	s.routes(s.engine)
	return s, nil
}

// Handler is the HTTP handler of the whole API, with the request timeout
// and the security headers applied.
func (s *Server) Handler() http.Handler { return s.handler(s.cfg.HTTP.RequestTimeout) }

// handler is Handler with the call limit limit.
func (s *Server) handler(limit time.Duration) http.Handler {
	return withSecurityHeaders(headAsGet(s.withTimeout(s.engine, limit)))
}

// HTTPServer is the http.Server to serve Handler with: a request whose
// headers or body do not arrive within the configured timeouts is answered
// or its connection closed, so slow clients cannot hold connections open.
// Media routes get the longer http.streamTimeout instead (see withTimeout).
func (s *Server) HTTPServer() *http.Server {
	h := s.cfg.HTTP
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: h.ReadHeaderTimeout, ReadTimeout: h.ReadTimeout,
		WriteTimeout: h.WriteTimeout, IdleTimeout: h.IdleTimeout, MaxHeaderBytes: h.MaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
}

// MetricsHandler serves the Prometheus metrics of the injected registry,
// for the listener of metrics.addr.
func (s *Server) MetricsHandler() http.Handler { return s.metricsHandler }

// Routes lists the registered routes as "METHOD /path" (gin syntax).
func (s *Server) Routes() []gin.RouteInfo { return s.engine.Routes() }
