package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// link is one authenticated device connection.
type link struct {
	id       string // connection id, stored as DeviceLink.ConnectionID
	imei     string
	conn     *mqttd.Conn
	dev      store.Device // inventory entry at connect time
	legacy   bool
	firmware string // from a legacy password, until the device reports status

	mu sync.Mutex
	// token waits for the device's subscription to its token topic.
	token *protocol.TokenGrant
	// pushed is the config version delivered on this connection (-1: none).
	pushed int64
	// sent holds the queued commands delivered on this connection.
	sent map[string]bool

	// seen is when the device's latest message was stored (unix
	// nanoseconds). The stored LastSeen is refreshed at most every
	// lastSeenEvery; Presence reports this one for a connected device.
	seen atomic.Int64

	// gps is the device's latest stored GPS sample, as the last job
	// committed for this connection knew it (commitLinked); nil when none
	// is known.
	gps *store.LatestGPS

	// Used only inside commit jobs, which the Committer runs one at a time.
	jobDev    store.Device // the inventory entry as of jobStamp
	jobStamp  uint64       // store.DeviceStamp of jobDev's record (0: none decoded)
	seenSaved time.Time    // the LastSeen last committed for this connection
}

// knownGPS is the device's latest stored GPS sample as l knows it, or nil.
func (l *link) knownGPS() *store.LatestGPS {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gps
}

// learnGPS keeps gps as the device's latest stored GPS sample (nil: none known).
func (l *link) learnGPS(gps *store.LatestGPS) {
	l.mu.Lock()
	l.gps = gps
	l.mu.Unlock()
}

// lastSeenEvery bounds how stale a connected device's stored LastSeen may
// get: rewriting its link record on every message would cost the group
// commit a read, a decode, an encode and a write per message.
const lastSeenEvery = time.Minute

// device returns the device's current inventory entry inside a commit
// job, decoding the record only when it changed since the last job.
func (l *link) device(tx *store.Tx) (store.Device, error) {
	stamp, err := tx.DeviceStamp(l.imei)
	if err != nil {
		return store.Device{}, err
	}
	if stamp != l.jobStamp || l.jobStamp == 0 {
		dev, err := tx.Device(l.imei)
		if err != nil {
			return store.Device{}, err
		}
		l.jobDev, l.jobStamp = *dev, stamp
	}
	return l.jobDev, nil
}

// lastSeen returns when the device's latest message was stored on this connection.
func (l *link) lastSeen() time.Time {
	if n := l.seen.Load(); n != 0 {
		return time.Unix(0, n).UTC()
	}
	return time.Time{}
}

func newLink(id string, c *mqttd.Conn, dev *store.Device) *link {
	return &link{id: id, imei: dev.IMEI, conn: c, dev: *dev, pushed: -1}
}

// registry indexes the live links by connection and by device.
type registry struct {
	mu      sync.RWMutex
	conns   map[*mqttd.Conn]*link
	devices map[string]*link
}

func newRegistry() *registry {
	return &registry{conns: map[*mqttd.Conn]*link{}, devices: map[string]*link{}}
}

// admit records an authenticated connection.
func (r *registry) admit(l *link) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns[l.conn] = l
}

// establish makes l the device's current connection.
func (r *registry) establish(l *link) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.devices[l.imei] = l
}

// drop forgets c and reports its link and whether it was the device's
// current connection.
func (r *registry) drop(c *mqttd.Conn) (*link, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.conns[c]
	if l == nil {
		return nil, false
	}
	delete(r.conns, c)
	current := r.devices[l.imei] == l
	if current {
		delete(r.devices, l.imei)
	}
	return l, current
}

func (r *registry) byConn(c *mqttd.Conn) *link {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.conns[c]
}

func (r *registry) byIMEI(imei string) *link {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.devices[imei]
}

func (r *registry) online() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.devices)
}

// deviceHandler is the broker's side of the MQTT server: authentication
// (auth.go), access rules (acl.go), ingest (ingest.go) and the session
// events below.
type deviceHandler struct{ s *Server }

// Online records the device online (activating it on its first
// connection) before the CONNACK goes out, so a connected device is online
// in the store. Any earlier connection of the device has ended by now.
func (h deviceHandler) Online(c *mqttd.Conn) {
	s := h.s
	l := s.links.byConn(c)
	if l == nil {
		return
	}
	s.links.establish(l)
	s.metrics.connects.WithLabelValues("accepted").Inc()
	var prev string // the connection recorded before this one
	if err := s.commitMessage(c, l, func(tx *store.Tx) (err error) { prev, err = s.markOnline(tx, l); return err }); err != nil {
		s.log.Error("record device online; trying again", "imei", l.imei, "error", err)
		s.unrecorded.add(l)
	}
	if s.Cluster != nil {
		s.Cluster.Connected(l.imei, l.id, prev)
	}
}

// Ready delivers what waits for the device when a resumed session already
// holds its subscriptions.
func (h deviceHandler) Ready(c *mqttd.Conn) {
	if l := h.s.links.byConn(c); l != nil {
		h.s.deliver(l)
	}
}

// Subscribed delivers what waits for the device on the topics it just subscribed to.
func (h deviceHandler) Subscribed(c *mqttd.Conn) {
	if l := h.s.links.byConn(c); l != nil {
		h.s.deliver(l)
	}
}

// Closed records the device offline unless a newer connection took over.
func (h deviceHandler) Closed(c *mqttd.Conn) {
	s := h.s
	l, current := s.links.drop(c)
	if l == nil {
		return
	}
	s.metrics.disconnects.Inc()
	if !current {
		return
	}
	if s.Cluster != nil {
		s.Cluster.Disconnected(l.imei, l.id)
	}
	// Not waited for here: the session is over and the write is ordered
	// after the connect of any newer connection, whose id it checks, so
	// it may also be tried again after a conflict.
	go s.throughConflicts(time.Now().Add(conflictWaitMax), nil, func() error { return <-s.recordOffline(context.Background(), l) })
}

// markOnline records the connection and activates a device on its first
// one. It returns the connection recorded before, if any.
func (s *Server) markOnline(tx *store.Tx, l *link) (string, error) {
	dl, err := tx.DeviceLink(l.imei)
	if err != nil {
		return "", err
	}
	prev := dl.ConnectionID
	was := dl.Presence
	now := tx.Now()
	dl.Presence, dl.ConnectionID, dl.ConnectedAt, dl.LastSeen = store.PresenceOnline, l.id, now, now
	dl.ProtocolVersion = int(l.conn.ProtocolVersion())
	dl.RemoteAddr = l.conn.Remote()
	dl.Legacy = l.legacy
	if l.firmware != "" {
		dl.Firmware = l.firmware
	}
	if err := tx.PutDeviceLink(dl); err != nil {
		return "", err
	}
	tx.OnCommit(func() { l.seenSaved = now })
	if err := emitPresence(tx, &l.dev, was, dl.Presence); err != nil {
		return "", err
	}
	dev, err := tx.Device(l.imei)
	if err != nil {
		return "", err
	}
	if dev.Status != store.DevicePendingActivation {
		return prev, nil
	}
	return prev, activate(tx, dev)
}

// activate moves a pending device to activated and records the
// deviceActivation event and activation message in the same transaction.
func activate(tx *store.Tx, dev *store.Device) error {
	dev.Status, dev.ActivatedAt = store.DeviceActivated, tx.Now()
	if err := tx.UpdateDevice(dev, "device.activate"); err != nil {
		return err
	}
	res, err := tx.IngestEvent(dev, store.EventInput{Type: store.EventDeviceActivation, Time: tx.Now(), PositionFromGPS: true})
	if err != nil {
		return err
	}
	var id int64 // 0 when the device's settings suppress the event
	if res.Event != nil {
		id = res.Event.ID
	}
	return tx.Emit(store.Message{Kind: store.MessageActivation, SubType: store.EventDeviceActivation, OrganizationID: dev.OrganizationID,
		PartnerID: dev.PartnerID, IMEI: dev.IMEI, Activation: &store.ActivationFact{EventID: id}})
}

// markOffline records the end of connection l, unless a newer one took over.
func (s *Server) markOffline(tx *store.Tx, l *link) error {
	dl, err := tx.DeviceLink(l.imei)
	if err != nil {
		return err
	}
	if dl.ConnectionID != l.id {
		return nil
	}
	was := dl.Presence
	now := tx.Now()
	dl.Presence, dl.ConnectionID, dl.DisconnectedAt, dl.LastSeen = store.PresenceOffline, "", now, now
	if err := tx.PutDeviceLink(dl); err != nil {
		return err
	}
	return emitPresence(tx, &l.dev, was, dl.Presence)
}

// emitPresence records a deviceStatus system message when presence changed.
func emitPresence(tx *store.Tx, dev *store.Device, was, now string) error {
	return tx.EmitPresence(dev, was, now)
}

// subscribed reports whether the device imei is subscribed to topic.
func (s *Server) subscribed(imei, topic string) bool {
	return s.mqtt.Subscribed(imei, topic)
}

// deliver sends the device what waits for it on the topics it is subscribed
// to: its new token, its desired configuration until acknowledged, and its
// queued commands, each at most once per connection.
func (s *Server) deliver(l *link) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn.Closed() {
		return
	}
	if l.token != nil && s.subscribed(l.imei, protocol.Topic(l.imei, protocol.TopicToken)) {
		if err := s.publishJSON(l.imei, protocol.TopicToken, l.token, nil); err != nil {
			s.log.Error("deliver device token", "imei", l.imei, "error", err)
		}
		l.token = nil
	}
	// The configuration and the queued commands are read in one view.
	config := s.subscribed(l.imei, protocol.Topic(l.imei, protocol.TopicConfig))
	commands := s.subscribed(l.imei, protocol.Topic(l.imei, protocol.TopicCommand))
	if !config && !commands {
		return
	}
	var reads store.ViewReads
	if config {
		reads = store.ViewDriverCredentials
	}
	var (
		desired    desiredDue
		desiredErr error
		cmds       []store.QueuedCommand
	)
	err := s.db.ViewDevice(context.Background(), l.imei, reads, func(tx *store.Tx) (err error) {
		if config {
			// Not the view's error: the commands go out all the same.
			desired, desiredErr = s.desiredDue(tx, l)
		}
		if commands {
			cmds, err = tx.QueuedCommands(l.imei)
		}
		return err
	})
	if config {
		s.publishDesiredLocked(l, desired, errors.Join(desiredErr, err))
	}
	if commands {
		s.publishQueuedLocked(l, cmds, err)
	}
}

// Disconnect ends the device's connection (MQTT 5: DISCONNECT 0x98
// administrative action), e.g. after it was removed from the inventory.
// It reports whether the device was connected.
func (s *Server) Disconnect(imei string) bool {
	l := s.links.byIMEI(imei)
	if l == nil {
		return false
	}
	l.conn.Close(packets.ErrAdministrativeAction)
	return true
}
