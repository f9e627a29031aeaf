package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// Device link state: what the broker knows about a dashcam's connection,
// credentials and the commands waiting for it. The broker writes it; the API
// reads it for device details and lists.

// Presence states of a device.
const (
	PresenceOnline  = "online"
	PresenceStandby = "standby"
	PresenceOffline = "offline"
)

// DeviceLink is a device's connection and health as last reported. A device
// that never connected has an offline record with zero times.
type DeviceLink struct {
	IMEI     string `json:"imei"`
	Presence string `json:"presence"`
	// ConnectionID names the current connection; empty while offline. A
	// disconnect only marks the device offline when it ends this connection.
	ConnectionID   string    `json:"connectionId,omitempty"`
	ConnectedAt    time.Time `json:"connectedAt,omitzero"`
	DisconnectedAt time.Time `json:"disconnectedAt,omitzero"`
	LastSeen       time.Time `json:"lastSeen,omitzero"`
	// ProtocolVersion is the MQTT version of the last connection (4 = 3.1.1, 5).
	ProtocolVersion int    `json:"protocolVersion,omitempty"`
	RemoteAddr      string `json:"remoteAddr,omitempty"`
	Firmware        string `json:"firmware,omitempty"`
	ProductType     string `json:"productType,omitempty"`
	// Legacy is true while the device authenticates without a token (firmware below 3.12).
	Legacy bool          `json:"legacy,omitempty"`
	Health *DeviceHealth `json:"health,omitempty"`
	// AckedConfigVersion is the highest desired-configuration version the device acknowledged.
	AckedConfigVersion int64           `json:"ackedConfigVersion"`
	ConfigAckedAt      time.Time       `json:"configAckedAt,omitzero"`
	ReportedConfig     json.RawMessage `json:"reportedConfig,omitempty"`
}

// Online reports whether the device holds a connection (online or standby).
func (l *DeviceLink) Online() bool {
	return l.Presence == PresenceOnline || l.Presence == PresenceStandby
}

// DeviceHealth is the device's last health report.
type DeviceHealth struct {
	SDCard         *SDCardHealth  `json:"sdCard,omitempty"`
	RecordingTest  string         `json:"recordingTestResult,omitempty"`
	PowerConnected *bool          `json:"powerConnected,omitempty"`
	Cameras        []CameraHealth `json:"cameras,omitempty"`
	DataUsage      *DataUsage     `json:"dataUsage,omitempty"`
	HotspotOn      *bool          `json:"hotspotOn,omitempty"`
	AdasCalibrated *bool          `json:"adasCalibrated,omitempty"`
	ReportedAt     time.Time      `json:"reportedAt"`
}

// SDCardHealth describes the storage card.
type SDCardHealth struct {
	Present      bool   `json:"present"`
	Healthy      bool   `json:"healthy"`
	UUID         string `json:"uuid,omitempty"`
	Manufacturer string `json:"manufacturer,omitempty"`
}

// CameraHealth is one camera: 1 road-facing, 2 in-cabin, 50 and above auxiliary.
type CameraHealth struct {
	ID           int    `json:"id"`
	Connected    bool   `json:"connected"`
	Kind         string `json:"kind,omitempty"`
	SerialNumber string `json:"serialNumber,omitempty"`
}

// DataUsage is cellular data used since PeriodStart.
type DataUsage struct {
	PeriodStart time.Time `json:"periodStart"`
	BytesUp     int64     `json:"bytesUp"`
	BytesDown   int64     `json:"bytesDown"`
}

// DeviceCredential is what the cloud keeps to authenticate a device: the
// SHA-256 of its current secret token, never the token.
type DeviceCredential struct {
	IMEI      string    `json:"imei"`
	TokenHash []byte    `json:"tokenHash,omitempty"`
	IssuedAt  time.Time `json:"issuedAt,omitzero"`
	// Generation counts the tokens ever issued; above 0 the device has left
	// legacy authentication behind for good.
	Generation int       `json:"generation"`
	RevokedAt  time.Time `json:"revokedAt,omitzero"`
	// LastBootstrap is the unix time carried by the last accepted bootstrap
	// proof; a proof must be later, so none is accepted twice.
	LastBootstrap int64 `json:"lastBootstrap,omitempty"`
}

// QueuedCommand is a command kept on disk until the device answers it.
type QueuedCommand struct {
	ID       string          `json:"id"`
	IMEI     string          `json:"imei"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args,omitempty"`
	QueuedAt time.Time       `json:"queuedAt"`
}

// dropDeviceLink forgets a removed device's connection state, token and queue.
func dropDeviceLink(tx *Tx, d *Device) error {
	if err := tx.rec.DeviceLinks().Delete(d.IMEI); err != nil {
		return err
	}
	if err := tx.rec.DeviceCredentials().Delete(d.IMEI); err != nil {
		return err
	}
	cmds, err := tx.QueuedCommands(d.IMEI)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if _, err := tx.DeleteQueuedCommand(d.IMEI, c.ID); err != nil {
			return err
		}
	}
	return nil
}

// DeviceLink returns the link state of imei; a device that never connected
// gets an offline record.
func (tx *Tx) DeviceLink(imei string) (*DeviceLink, error) {
	l, err := tx.rec.DeviceLinks().Get(imei)
	switch {
	case isNotFound(err):
		return &DeviceLink{IMEI: imei, Presence: PresenceOffline}, nil
	case err != nil:
		return nil, err
	}
	return l, nil
}

// PutDeviceLink stores l. Link state is telemetry the device reports, so it is
// not audited.
func (tx *Tx) PutDeviceLink(l *DeviceLink) error {
	if l.IMEI == "" {
		return Invalid("", "device link imei must not be empty")
	}
	return tx.rec.DeviceLinks().Put(l)
}

// DeviceLinkNodes is what an engine may add to its DeviceLinkRecords so
// that the nodes of a cluster find the links of a node without reading
// every link (the dead-nodes sweep asks every cluster.jobLockRetry, and a
// cluster may hold a million links). Its methods do what Tx.ConnectedNodes
// and Tx.MarkOffline say; MarkOffline returns the links it set offline.
type DeviceLinkNodes interface {
	ConnectedNodes() ([]string, error)
	MarkOffline(t time.Time, prefix string) ([]OfflineLink, error)
}

// OfflineLink is a link MarkOffline set offline, with the presence it had.
type OfflineLink struct {
	IMEI string
	Was  string
}

// MarkAllOffline sets every link that claims a connection to offline at t;
// a broker alone calls it on start, when no connection can exist yet.
func (tx *Tx) MarkAllOffline(t time.Time) (int, error) { return tx.MarkOffline(t, "") }

// MarkOffline sets the links that claim a connection whose id begins with
// prefix to offline at t and reports how many there were: a node of a
// cluster calls it on start with its own prefix, since the connections
// other nodes recorded are live, and for the nodes it finds dead. Each
// device set offline gets the deviceStatus system message a disconnect
// records (EmitPresence), in this transaction: whoever ended the
// connection, the organization hears of it once.
func (tx *Tx) MarkOffline(t time.Time, prefix string) (int, error) {
	marked, err := tx.markOffline(t, prefix)
	if err != nil {
		return 0, err
	}
	for _, m := range marked {
		d, err := tx.Device(m.IMEI)
		if isNotFound(err) {
			continue // a link left by a removed device: nobody to tell
		}
		if err != nil {
			return 0, err
		}
		if err := tx.emitPresence(d, m.Was, PresenceOffline, t); err != nil {
			return 0, err
		}
	}
	return len(marked), nil
}

func (tx *Tx) markOffline(t time.Time, prefix string) ([]OfflineLink, error) {
	if n, ok := tx.rec.DeviceLinks().(DeviceLinkNodes); ok {
		return n.MarkOffline(t, prefix)
	}
	var stale []DeviceLink
	err := tx.rec.DeviceLinks().Each(func(l *DeviceLink) error {
		if l.Presence != PresenceOffline && strings.HasPrefix(l.ConnectionID, prefix) {
			stale = append(stale, *l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	marked := make([]OfflineLink, 0, len(stale))
	for i := range stale {
		l := &stale[i]
		marked = append(marked, OfflineLink{IMEI: l.IMEI, Was: l.Presence})
		l.Presence, l.ConnectionID, l.DisconnectedAt = PresenceOffline, "", t
		if err := tx.PutDeviceLink(l); err != nil {
			return nil, err
		}
	}
	return marked, nil
}

// EmitPresence records the deviceStatus system message of dev's presence
// changing from was to now; nothing when it did not change.
func (tx *Tx) EmitPresence(dev *Device, was, now string) error {
	return tx.emitPresence(dev, was, now, time.Time{})
}

// emitPresence is EmitPresence at time at (the transaction's time when zero).
func (tx *Tx) emitPresence(dev *Device, was, now string, at time.Time) error {
	if was == now {
		return nil
	}
	return tx.Emit(Message{Kind: MessageSystem, SubType: SystemDeviceStatus, Time: at,
		OrganizationID: dev.OrganizationID, PartnerID: dev.PartnerID, IMEI: dev.IMEI,
		Presence: &PresenceFact{Status: now, Previous: was}})
}

// DeviceCredential returns the credential of imei; a device never issued a
// token gets an empty record (Generation 0).
func (tx *Tx) DeviceCredential(imei string) (*DeviceCredential, error) {
	c, err := tx.rec.DeviceCredentials().Get(imei)
	switch {
	case isNotFound(err):
		return &DeviceCredential{IMEI: imei}, nil
	case err != nil:
		return nil, err
	}
	return c, nil
}

// IssueDeviceToken records hash as the only valid token of the device,
// revoking any older one, and audits the issue without the hash. proofTime
// is the unix time of the bootstrap proof that earned the token.
func (tx *Tx) IssueDeviceToken(imei string, hash []byte, proofTime int64) error {
	d, err := tx.Device(imei)
	if err != nil {
		return err
	}
	if len(hash) != 32 {
		return Invalid("", "device token hash must be 32 bytes (SHA-256)")
	}
	c, err := tx.DeviceCredential(imei)
	if err != nil {
		return err
	}
	replaced := len(c.TokenHash) > 0
	c.TokenHash = bytes.Clone(hash)
	c.IssuedAt = tx.now
	c.Generation++
	c.RevokedAt = time.Time{}
	c.LastBootstrap = max(c.LastBootstrap, proofTime)
	if err := tx.rec.DeviceCredentials().Put(c); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.token.issue", EntityType: "device", EntityID: imei,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID,
		After: map[string]any{"generation": c.Generation, "replacedToken": replaced}})
}

// RevokeDeviceToken invalidates the device's token (factory reset); the
// device must bootstrap again. reason is kept in the audit entry.
func (tx *Tx) RevokeDeviceToken(imei, reason string) error {
	d, err := tx.Device(imei)
	if err != nil {
		return err
	}
	c, err := tx.DeviceCredential(imei)
	if err != nil {
		return err
	}
	if len(c.TokenHash) == 0 {
		return nil
	}
	c.TokenHash = nil
	c.RevokedAt = tx.now
	if err := tx.rec.DeviceCredentials().Put(c); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.token.revoke", EntityType: "device", EntityID: imei,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, Reason: reason,
		After: map[string]any{"generation": c.Generation}})
}

// QueueCommand keeps c until the device answers it, and audits the request.
func (tx *Tx) QueueCommand(c *QueuedCommand) error {
	d, err := tx.Device(c.IMEI)
	if err != nil {
		return err
	}
	switch {
	case c.ID == "":
		return Invalid("", "queued command id must not be empty")
	case c.Name == "":
		return Invalid("", "queued command name must not be empty")
	}
	c.QueuedAt = tx.now
	if err := tx.rec.QueuedCommands().Add(c); err != nil {
		return err
	}
	return tx.Audit(AuditChange{Action: "device.command.queue", EntityType: "device", EntityID: c.IMEI,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, After: c})
}

// QueuedCommands returns the commands waiting for imei, oldest first.
func (tx *Tx) QueuedCommands(imei string) ([]QueuedCommand, error) {
	return tx.rec.QueuedCommands().List(imei)
}

// QueuedCommand returns the queued command id of imei.
func (tx *Tx) QueuedCommand(imei, id string) (*QueuedCommand, error) {
	c, err := tx.rec.QueuedCommands().Get(imei, id)
	if isNotFound(err) {
		return nil, NotFound("queued command %s of device %s", id, imei)
	}
	return c, err
}

// DeleteQueuedCommand drops a queued command once the device answered it; it
// reports whether the command was queued.
func (tx *Tx) DeleteQueuedCommand(imei, id string) (bool, error) {
	return tx.rec.QueuedCommands().Delete(imei, id)
}

// ConnectedNodes lists the nodes that links claim a connection to: the
// part of each connection id before its first "/" (a cluster node's id),
// once each, in no order. A connection id without "/" (a node alone)
// names no node.
func (tx *Tx) ConnectedNodes() ([]string, error) {
	if n, ok := tx.rec.DeviceLinks().(DeviceLinkNodes); ok {
		return n.ConnectedNodes()
	}
	seen := map[string]bool{}
	var nodes []string
	err := tx.rec.DeviceLinks().Each(func(l *DeviceLink) error {
		node, _, found := strings.Cut(l.ConnectionID, "/")
		if l.Presence != PresenceOffline && found && !seen[node] {
			seen[node] = true
			nodes = append(nodes, node)
		}
		return nil
	})
	return nodes, err
}
