// Package configs holds fleetcam's typed configuration: defaults in code,
// then a YAML file, then FLEETCAM_* environment variables, validated once at
// start-up. fleetcam.yaml beside this file documents every setting.
package configs

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fleetcam/fleetcam/store"
)

// Config is every fleetcam setting.
type Config struct {
	// Cloud is the cloud environment tokens are issued for, e.g. "us" or "eu".
	Cloud    string `yaml:"cloud"`
	DataDir  string `yaml:"dataDir"`
	LogLevel string `yaml:"logLevel"`
	// PublicURL is how devices and partners reach the HTTP listener; it
	// prefixes signed media links. Empty: derived from the HTTP address.
	PublicURL string `yaml:"publicURL"`

	Store     Store     `yaml:"store"`
	HTTP      HTTP      `yaml:"http"`
	MQTT      MQTT      `yaml:"mqtt"`
	Auth      Auth      `yaml:"auth"`
	Bootstrap Bootstrap `yaml:"bootstrap"`
	Devices   Devices   `yaml:"devices"`
	Webhooks  Webhooks  `yaml:"webhooks"`
	Media     Media     `yaml:"media"`
	SMTP      SMTP      `yaml:"smtp"`
	Retention Retention `yaml:"retention"`
	Metrics   Metrics   `yaml:"metrics"`
	Debug     Debug     `yaml:"debug"`
	Cluster   Cluster   `yaml:"cluster"`
}

// Store chooses where the records are kept: the embedded bbolt file in
// DataDir (the default), or PostgreSQL when PostgresURL is set.
type Store struct {
	// PostgresURL is the libpq URL of the PostgreSQL database that keeps
	// every record, e.g. postgres://fleetcam@db:5432/fleetcam?sslmode=require;
	// empty: the bbolt file <dataDir>/fleetcam.db.
	PostgresURL string `yaml:"postgresURL"`
	// StatementTimeout bounds each PostgreSQL statement on the server.
	StatementTimeout time.Duration `yaml:"statementTimeout"`
	// MaxConns bounds the PostgreSQL connection pool of this process; the
	// views of connecting devices have a pool of a quarter as many (at
	// least 2) of their own.
	MaxConns int `yaml:"maxConns"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Addr serves /metrics on its own listener, and no longer on the API
	// listener; empty: /metrics is served on the API listener.
	Addr string `yaml:"addr"`
}

// HTTP configures the API listener.
type HTTP struct {
	Addr            string        `yaml:"addr"`
	RequestTimeout  time.Duration `yaml:"requestTimeout"`
	MaxBodyBytes    int64         `yaml:"maxBodyBytes"`
	DefaultPageSize int           `yaml:"defaultPageSize"`
	MaxPageSize     int           `yaml:"maxPageSize"`
	ShutdownTimeout time.Duration `yaml:"shutdownTimeout"`
	// RateLimit is the sustained requests per second allowed per caller (per
	// token, or per address before authentication), with RateBurst on top;
	// 0 turns limiting off.
	RateLimit float64 `yaml:"rateLimit"`
	RateBurst int     `yaml:"rateBurst"`
	// ReadHeaderTimeout bounds the arrival of a request's headers,
	// ReadTimeout that of a whole API request with its body, WriteTimeout
	// the time from the end of the headers to the end of the answer, and
	// IdleTimeout how long a keep-alive connection waits for its next request.
	ReadHeaderTimeout time.Duration `yaml:"readHeaderTimeout"`
	ReadTimeout       time.Duration `yaml:"readTimeout"`
	WriteTimeout      time.Duration `yaml:"writeTimeout"`
	IdleTimeout       time.Duration `yaml:"idleTimeout"`
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int `yaml:"maxHeaderBytes"`
	// StreamTimeout replaces ReadTimeout and WriteTimeout for media routes
	// (uploads, downloads, live frames and live viewing).
	StreamTimeout time.Duration `yaml:"streamTimeout"`
	// TrustedProxies are the addresses or CIDR ranges of reverse proxies
	// whose X-Forwarded-For and X-Real-IP headers name the client; empty:
	// the client is the connection's peer, and those headers are ignored.
	TrustedProxies []string `yaml:"trustedProxies"`
}

// MQTT configures the embedded broker.
type MQTT struct {
	Addr    string `yaml:"addr"`
	WSAddr  string `yaml:"wsAddr"`
	TLSAddr string `yaml:"tlsAddr"`
	TLSCert string `yaml:"tlsCert"`
	TLSKey  string `yaml:"tlsKey"`
	// MaxPacketSize bounds one MQTT packet in bytes.
	MaxPacketSize int `yaml:"maxPacketSize"`
	// MaxInflight is the Receive Maximum announced to devices and the most
	// unacknowledged QoS 1 messages sent to a device at a time.
	MaxInflight int `yaml:"maxInflight"`
	// ClientWritesPending bounds the cloud messages a device's session
	// holds beyond those in flight (quota used up, or device offline).
	ClientWritesPending int `yaml:"clientWritesPending"`
	// MaxSessionExpiry caps the session expiry a device may ask for.
	MaxSessionExpiry time.Duration `yaml:"maxSessionExpiry"`
	// TrustedProxies are the addresses or CIDR ranges of TCP load
	// balancers that open each connection of the TCP and TLS listeners
	// with a PROXY protocol header (v1 or v2) naming the device's address;
	// a connection from them without one is refused. Connections from
	// elsewhere are served as they come. Empty: no PROXY protocol.
	TrustedProxies []string `yaml:"trustedProxies"`
	// ConnectRatePerIP and ConnectBurstPerIP limit new connections per source address.
	ConnectRatePerIP  float64 `yaml:"connectRatePerIP"`
	ConnectBurstPerIP int     `yaml:"connectBurstPerIP"`
	// CommandTimeout is how long a command waits for the device's reply.
	CommandTimeout time.Duration `yaml:"commandTimeout"`
	// CommitBatch and CommitDelay tune the group commit of device messages.
	CommitBatch int           `yaml:"commitBatch"`
	CommitDelay time.Duration `yaml:"commitDelay"`
}

// Auth configures tokens.
type Auth struct {
	// SigningKey signs API tokens; empty: generated on first start and kept in the data dir.
	SigningKey     string        `yaml:"signingKey"`
	UserTokenTTL   time.Duration `yaml:"userTokenTTL"`
	AdminTokenTTL  time.Duration `yaml:"adminTokenTTL"`
	ScopedTokenTTL time.Duration `yaml:"scopedTokenTTL"`
	SSOJWTTTL      time.Duration `yaml:"ssoJWTTTL"`
	// OAuthTokenTTL is the lifetime of the tokens OAuth clients get from
	// POST /oauth/token (client credentials); a client asks for a new one
	// with its secret when one expires.
	OAuthTokenTTL time.Duration `yaml:"oauthTokenTTL"`
	InviteTTL     time.Duration `yaml:"inviteTTL"`
	// PasswordResetTTL is how long the token e-mailed by POST
	// /v2/forget-password/{email} may be redeemed.
	PasswordResetTTL time.Duration `yaml:"passwordResetTTL"`
	BcryptCost       int           `yaml:"bcryptCost"`
	// Throttle brakes password, SSO and invitation guessing.
	Throttle Throttle `yaml:"throttle"`
}

// Throttle brakes repeated failed sign-ins: after a number of free
// attempts, each further attempt on the same account (e-mail address or
// SSO organization) or from the same client address must wait, twice as
// long each time up to MaxBackoff. A successful sign-in frees the account.
// State is kept per node, in memory.
type Throttle struct {
	AccountFreeAttempts int           `yaml:"accountFreeAttempts"`
	AddressFreeAttempts int           `yaml:"addressFreeAttempts"`
	InitialBackoff      time.Duration `yaml:"initialBackoff"`
	MaxBackoff          time.Duration `yaml:"maxBackoff"`
	// MaxEntries bounds the accounts and addresses remembered; the least
	// recently seen are forgotten first.
	MaxEntries int `yaml:"maxEntries"`
	// PasswordWait is how long a password check waits for a free CPU
	// (bcrypt runs on at most as many at once as there are cores) before
	// it is answered with 429.
	PasswordWait time.Duration `yaml:"passwordWait"`
}

// Bootstrap is the first partner, created when the store has none.
type Bootstrap struct {
	PartnerName     string `yaml:"partnerName"`
	PartnerEmail    string `yaml:"partnerEmail"`
	PartnerPassword string `yaml:"partnerPassword"`
}

// Devices configures device authentication.
type Devices struct {
	// FactoryMasterKey derives each device's factory key (hex). The default is
	// the development key the simulator also uses; production sets its own.
	FactoryMasterKey string `yaml:"factoryMasterKey"`
	// BootstrapSkew is how far a bootstrap proof's clock may be off.
	BootstrapSkew time.Duration `yaml:"bootstrapSkew"`
	// AllowLegacyFirmware lets firmware below 3.12 connect without a token
	// unless its organization forbids it.
	AllowLegacyFirmware bool `yaml:"allowLegacyFirmware"`
	// OfflineAlarmAfter raises the device-offline alarm after this long offline.
	OfflineAlarmAfter time.Duration `yaml:"offlineAlarmAfter"`
}

// Webhooks configures delivery.
type Webhooks struct {
	Workers        int           `yaml:"workers"`
	RequestTimeout time.Duration `yaml:"requestTimeout"`
	MaxRetryAge    time.Duration `yaml:"maxRetryAge"`
	InitialBackoff time.Duration `yaml:"initialBackoff"`
	MaxBackoff     time.Duration `yaml:"maxBackoff"`
	// AllowPrivateTargets permits loopback, private and link-local URLs (tests, local development).
	AllowPrivateTargets bool `yaml:"allowPrivateTargets"`
}

// MediaDir is the directory of the media files: media.dir, or media under
// the data directory.
func (c Config) MediaDir() string {
	if c.Media.Dir != "" {
		return c.Media.Dir
	}
	return filepath.Join(c.DataDir, "media")
}

// Media configures blob storage and signed links.
type Media struct {
	// Dir keeps the media files (event videos and snapshots, ADAS images);
	// empty: the directory media under DataDir. The nodes of a cluster
	// must share it (docs/cluster.md), or keep media in S3 instead.
	Dir string `yaml:"dir"`
	// S3 keeps the media files in a bucket of an S3-compatible object
	// store instead of Dir, when its endpoint is set.
	S3        MediaS3       `yaml:"s3"`
	LinkTTL   time.Duration `yaml:"linkTTL"`
	UploadTTL time.Duration `yaml:"uploadTTL"`
	// LiveStreamConnectTimeout is how long a new live stream waits for the first frame.
	LiveStreamConnectTimeout time.Duration `yaml:"liveStreamConnectTimeout"`
	// LiveStreamIdleTimeout is how long a live stream goes on with nobody
	// watching before the device is told to stop.
	LiveStreamIdleTimeout time.Duration `yaml:"liveStreamIdleTimeout"`
}

// SMTP configures e-mail (alarm reports, password resets); an empty Addr
// disables e-mail.
type SMTP struct {
	Addr     string `yaml:"addr"`
	From     string `yaml:"from"`
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// PollInterval is how often the mailer looks for recipients with new alarms.
	PollInterval time.Duration `yaml:"pollInterval"`
}

// Retention configures the background purge.
type Retention struct {
	Interval time.Duration `yaml:"interval"`
	// WebhookDeliveryDays is how long a finished webhook delivery (delivered
	// or given up) stays in the delivery log; pending ones stay until they finish.
	WebhookDeliveryDays int `yaml:"webhookDeliveryDays"`
}

// Debug configures diagnostics for operators. Everything here is off by default.
type Debug struct {
	// PprofAddr serves Go's runtime profiles (net/http/pprof, under
	// /debug/pprof/) on their own listener; empty disables it. The profiles
	// reveal internals, so bind it to loopback.
	PprofAddr string `yaml:"pprofAddr"`
}

// Default returns the built-in configuration; fleetcam runs on it unchanged.
func Default() Config {
	return Config{
		Cloud:    "us",
		DataDir:  "./data",
		LogLevel: "info",
		HTTP: HTTP{
			Addr: ":8080", RequestTimeout: 30 * time.Second, MaxBodyBytes: 1 << 20,
			DefaultPageSize: 100, MaxPageSize: 1500, ShutdownTimeout: 15 * time.Second,
			RateLimit: 500, RateBurst: 1000,
			ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second,
			IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, StreamTimeout: 30 * time.Minute,
		},
		MQTT: MQTT{
			Addr: ":1883", MaxPacketSize: 128 << 10, MaxInflight: 64, ClientWritesPending: 32,
			MaxSessionExpiry: 7 * 24 * time.Hour, ConnectRatePerIP: 2000, ConnectBurstPerIP: 4000,
			CommandTimeout: 10 * time.Second, CommitBatch: 1024, CommitDelay: 0,
		},
		Auth: Auth{
			UserTokenTTL: 24 * time.Hour, AdminTokenTTL: 24 * time.Hour, ScopedTokenTTL: 24 * time.Hour,
			SSOJWTTTL: 15 * time.Minute, OAuthTokenTTL: time.Hour, InviteTTL: 7 * 24 * time.Hour, PasswordResetTTL: time.Hour, BcryptCost: 10,
			Throttle: Throttle{AccountFreeAttempts: 5, AddressFreeAttempts: 20, InitialBackoff: time.Second,
				MaxBackoff: 15 * time.Minute, MaxEntries: 100000, PasswordWait: time.Second},
		},
		Bootstrap: Bootstrap{PartnerName: "Default partner", PartnerEmail: "admin@fleetcam.local"},
		Devices: Devices{
			FactoryMasterKey:    "666c65657463616d2d646576656c6f706d656e742d666163746f72792d6b6579",
			BootstrapSkew:       10 * time.Minute,
			AllowLegacyFirmware: true,
			OfflineAlarmAfter:   24 * time.Hour,
		},
		Webhooks: Webhooks{
			Workers: 8, RequestTimeout: 10 * time.Second, MaxRetryAge: 72 * time.Hour,
			InitialBackoff: time.Second, MaxBackoff: 30 * time.Minute,
		},
		Media: Media{LinkTTL: 5 * time.Minute, UploadTTL: 15 * time.Minute, LiveStreamConnectTimeout: 20 * time.Second, LiveStreamIdleTimeout: 10 * time.Second,
			S3: MediaS3{PartSizeMB: 16}},
		SMTP:      SMTP{From: "alarms@fleetcam.local", PollInterval: 10 * time.Second},
		Retention: Retention{Interval: time.Hour, WebhookDeliveryDays: 30},
		Store:     Store{StatementTimeout: 30 * time.Second, MaxConns: 20},
		Cluster:   Cluster{JobLockRetry: 5 * time.Second},
	}
}

// Load builds the configuration from the defaults, then the YAML file at path
// (when not empty), then the environment (getenv, usually os.Getenv), and validates it.
func Load(path string, getenv func(string) string) (Config, error) {
	cfg, err := read(path, getenv)
	if err != nil {
		return cfg, err
	}
	if err := cfg.Cluster.fillNodeID(); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// read builds the configuration as Load does, without validating it.
func read(path string, getenv func(string) string) (Config, error) {
	cfg := Default()
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("config: read %s: %w", path, err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return cfg, fmt.Errorf("config: %s: %w", path, err)
		}
		if err := checkYAML(&doc); err != nil {
			return cfg, fmt.Errorf("config: %s: %w", path, err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(raw)))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return cfg, fmt.Errorf("config: %s: %w", path, err)
		}
	}
	return cfg, cfg.applyEnv(getenv)
}

// env names every environment variable and the setting it overrides.
func (c *Config) envTable() []envVar {
	return append([]envVar{
		{"FLEETCAM_CLOUD", &c.Cloud},
		{"FLEETCAM_DATA_DIR", &c.DataDir},
		{"FLEETCAM_MEDIA_DIR", &c.Media.Dir},
		{"FLEETCAM_POSTGRES_URL", &c.Store.PostgresURL},
		{"FLEETCAM_LOG_LEVEL", &c.LogLevel},
		{"FLEETCAM_PUBLIC_URL", &c.PublicURL},
		{"FLEETCAM_HTTP_ADDR", &c.HTTP.Addr},
		{"FLEETCAM_MQTT_ADDR", &c.MQTT.Addr},
		{"FLEETCAM_MQTT_WS_ADDR", &c.MQTT.WSAddr},
		{"FLEETCAM_MQTT_TLS_ADDR", &c.MQTT.TLSAddr},
		{"FLEETCAM_MQTT_TLS_CERT", &c.MQTT.TLSCert},
		{"FLEETCAM_MQTT_TLS_KEY", &c.MQTT.TLSKey},
		{"FLEETCAM_SIGNING_KEY", &c.Auth.SigningKey},
		{"FLEETCAM_PARTNER_NAME", &c.Bootstrap.PartnerName},
		{"FLEETCAM_PARTNER_EMAIL", &c.Bootstrap.PartnerEmail},
		{"FLEETCAM_PARTNER_PASSWORD", &c.Bootstrap.PartnerPassword},
		{"FLEETCAM_FACTORY_MASTER_KEY", &c.Devices.FactoryMasterKey},
		{"FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS", &c.Webhooks.AllowPrivateTargets},
		{"FLEETCAM_SMTP_ADDR", &c.SMTP.Addr},
		{"FLEETCAM_SMTP_FROM", &c.SMTP.From},
		{"FLEETCAM_PPROF_ADDR", &c.Debug.PprofAddr},
		{"FLEETCAM_METRICS_ADDR", &c.Metrics.Addr},
		{"FLEETCAM_NATS_URL", &c.Cluster.NATSURL},
		{"FLEETCAM_NODE_ID", &c.Cluster.NodeID},
	}, c.mediaEnv()...)
}

type envVar struct {
	name string
	dst  any
}

func (c *Config) applyEnv(getenv func(string) string) error {
	for _, e := range c.envTable() {
		v := getenv(e.name)
		if v == "" {
			continue
		}
		switch d := e.dst.(type) {
		case *string:
			*d = v
		case *bool:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("config: %s=%q: must be true or false", e.name, v)
			}
			*d = b
		}
	}
	c.Media.S3.applyAWSEnv(getenv)
	return nil
}

// Validate reports the first setting that is out of range, by name.
func (c *Config) Validate() error {
	check := func(ok bool, setting, rule string) error {
		if ok {
			return nil
		}
		return fmt.Errorf("config: %s %s", setting, rule)
	}
	addr := func(a string) bool {
		if a == "" {
			return true
		}
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			return false
		}
		n, err := strconv.Atoi(port)
		return err == nil && n >= 0 && n <= 65535
	}
	level := strings.ToLower(c.LogLevel)
	for _, err := range []error{
		check(c.Cloud != "" && !strings.ContainsAny(c.Cloud, " \t/"), "cloud", "must be a non-empty word such as us or eu"),
		check(c.DataDir != "", "dataDir", "must not be empty"),
		check(c.Store.PostgresURL == "" || validPostgresURL(c.Store.PostgresURL), "store.postgresURL",
			"must be a postgres:// or postgresql:// URL with a host, e.g. postgres://fleetcam@127.0.0.1:5432/fleetcam?sslmode=disable"),
		check(c.Store.StatementTimeout >= time.Second && c.Store.StatementTimeout <= 10*time.Minute, "store.statementTimeout", "must be from 1s to 10m"),
		check(c.Store.MaxConns >= 2 && c.Store.MaxConns <= 1000, "store.maxConns", "must be from 2 to 1000"),
		check(c.PublicURL == "" || publicURL(c.PublicURL), "publicURL", "must be an absolute http or https URL such as https://fleet.example.com, or empty"),
		check(level == "debug" || level == "info" || level == "warn" || level == "error", "logLevel", "must be one of debug, info, warn, error"),
		check(c.HTTP.Addr != "" && addr(c.HTTP.Addr), "http.addr", "must be host:port"),
		check(c.MQTT.Addr != "" && addr(c.MQTT.Addr), "mqtt.addr", "must be host:port"),
		check(addr(c.MQTT.WSAddr), "mqtt.wsAddr", "must be host:port or empty"),
		check(addr(c.MQTT.TLSAddr), "mqtt.tlsAddr", "must be host:port or empty"),
		check(addr(c.Debug.PprofAddr), "debug.pprofAddr", "must be host:port or empty"),
		check(addr(c.Metrics.Addr), "metrics.addr", "must be host:port or empty"),
		check(c.MQTT.TLSAddr == "" || (c.MQTT.TLSCert != "" && c.MQTT.TLSKey != ""), "mqtt.tlsCert", "and mqtt.tlsKey are required with mqtt.tlsAddr"),
		check(c.HTTP.RequestTimeout > 0, "http.requestTimeout", "must be positive"),
		check(c.HTTP.MaxBodyBytes >= 1024, "http.maxBodyBytes", "must be at least 1024"),
		check(c.HTTP.MaxPageSize >= 1, "http.maxPageSize", "must be at least 1"),
		check(c.HTTP.RateLimit >= 0, "http.rateLimit", "must not be negative (0 turns limiting off)"),
		check(c.HTTP.RateLimit == 0 || c.HTTP.RateBurst >= 1, "http.rateBurst", "must be at least 1 while http.rateLimit is set"),
		check(c.HTTP.ReadHeaderTimeout > 0 && c.HTTP.ReadTimeout > 0 && c.HTTP.IdleTimeout > 0 && c.HTTP.StreamTimeout > 0,
			"http.readHeaderTimeout, readTimeout, idleTimeout and streamTimeout", "must be positive"),
		check(c.HTTP.WriteTimeout > c.HTTP.RequestTimeout, "http.writeTimeout", "must be longer than http.requestTimeout, or no TimeoutError could be sent"),
		check(c.HTTP.MaxHeaderBytes >= 4096, "http.maxHeaderBytes", "must be at least 4096"),
		check(trustedProxies(c.HTTP.TrustedProxies), "http.trustedProxies", "must list IP addresses or CIDR ranges"),
		check(trustedProxies(c.MQTT.TrustedProxies), "mqtt.trustedProxies", "must list IP addresses or CIDR ranges"),
		check(c.HTTP.DefaultPageSize >= 1 && c.HTTP.DefaultPageSize <= c.HTTP.MaxPageSize, "http.defaultPageSize", "must be from 1 to http.maxPageSize"),
		check(c.MQTT.MaxPacketSize >= 1024, "mqtt.maxPacketSize", "must be at least 1024"),
		check(c.MQTT.MaxInflight >= 1 && c.MQTT.MaxInflight <= 65535, "mqtt.maxInflight", "must be from 1 to 65535"),
		check(c.MQTT.ClientWritesPending >= 1, "mqtt.clientWritesPending", "must be at least 1"),
		check(c.MQTT.CommitBatch >= 1, "mqtt.commitBatch", "must be at least 1"),
		check(c.MQTT.CommitDelay >= 0, "mqtt.commitDelay", "must not be negative"),
		check(c.MQTT.CommandTimeout > 0, "mqtt.commandTimeout", "must be positive"),
		check(c.Auth.UserTokenTTL > 0 && c.Auth.AdminTokenTTL > 0 && c.Auth.ScopedTokenTTL > 0, "auth.*TokenTTL", "must be positive"),
		check(c.Auth.OAuthTokenTTL >= time.Minute && c.Auth.OAuthTokenTTL <= 24*time.Hour, "auth.oauthTokenTTL", "must be from 1m to 24h"),
		check(c.Auth.SigningKey == "" || len(c.Auth.SigningKey) >= 32, "auth.signingKey", "must be at least 32 characters (or 64 hex digits), or empty"),
		check(c.Auth.PasswordResetTTL > 0, "auth.passwordResetTTL", "must be positive"),
		check(c.Auth.BcryptCost >= 4 && c.Auth.BcryptCost <= 31, "auth.bcryptCost", "must be from 4 to 31"),
		check(c.Auth.Throttle.AccountFreeAttempts >= 1 && c.Auth.Throttle.AddressFreeAttempts >= 1,
			"auth.throttle.accountFreeAttempts and addressFreeAttempts", "must be at least 1"),
		check(c.Auth.Throttle.InitialBackoff > 0 && c.Auth.Throttle.MaxBackoff >= c.Auth.Throttle.InitialBackoff,
			"auth.throttle.maxBackoff", "must be at least auth.throttle.initialBackoff, which must be positive"),
		check(c.Auth.Throttle.MaxEntries >= 100, "auth.throttle.maxEntries", "must be at least 100"),
		check(c.Auth.Throttle.PasswordWait > 0, "auth.throttle.passwordWait", "must be positive"),
		check(c.Bootstrap.PartnerEmail == "" || strings.Contains(c.Bootstrap.PartnerEmail, "@"), "bootstrap.partnerEmail", "must be an e-mail address"),
		checkPartnerPassword(c.Bootstrap.PartnerPassword),
		check(len(c.Devices.FactoryMasterKey) >= 32, "devices.factoryMasterKey", "must be at least 32 hex characters"),
		check(c.Webhooks.Workers >= 1, "webhooks.workers", "must be at least 1"),
		check(c.Webhooks.RequestTimeout > 0, "webhooks.requestTimeout", "must be positive"),
		check(c.Webhooks.MaxRetryAge >= 24*time.Hour, "webhooks.maxRetryAge", "must be at least 24h"),
		check(c.Media.LinkTTL > 0 && c.Media.LinkTTL <= time.Hour, "media.linkTTL", "must be from 1ns to 1h"),
		check(c.Media.LiveStreamIdleTimeout > 0 && c.Media.LiveStreamIdleTimeout <= 30*time.Minute, "media.liveStreamIdleTimeout",
			"must be from 1ns to 30m (the length of a live stream)"),
		check(c.SMTP.PollInterval > 0, "smtp.pollInterval", "must be positive"),
		check(c.Retention.Interval > 0, "retention.interval", "must be positive"),
		check(c.Retention.WebhookDeliveryDays >= 1, "retention.webhookDeliveryDays", "must be at least 1"),
		c.checkMedia(),
		c.checkCluster(),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// trustedProxies reports whether every entry is an IP address or a CIDR range.
func trustedProxies(list []string) bool {
	for _, p := range list {
		if net.ParseIP(p) == nil {
			if _, _, err := net.ParseCIDR(p); err != nil {
				return false
			}
		}
	}
	return true
}

// publicURL reports whether s is an absolute http or https URL with a host.
func publicURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Opaque == ""
}

// checkPartnerPassword applies the password rules every user password
// follows (store.CheckPassword) to the first partner's; empty generates one.
func checkPartnerPassword(pw string) error {
	if pw == "" {
		return nil
	}
	if err := store.CheckPassword(pw); err != nil {
		return fmt.Errorf("config: bootstrap.partnerPassword (FLEETCAM_PARTNER_PASSWORD) %w", err)
	}
	return nil
}

// validPostgresURL reports whether s is a postgres:// or postgresql:// URL
// that names a host.
func validPostgresURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.Host != ""
}
