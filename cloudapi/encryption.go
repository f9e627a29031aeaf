package cloudapi

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Recording encryption keys are secrets the cloud never stores: each is
// derived with HKDF-SHA256 from the media key, the device's IMEI and its
// ownership (ownership.go), so a device that moves to another organization
// gets a key its earlier owner never saw. The reference contract offers no
// call to rotate a device's key, so every ownership has one key, created
// when the device joined its organization. fleetcam's devices do not
// acknowledge keys, so confirmedByDevice is false. Keys are read only by
// those who may change the device and see its media (not viewers, not the
// editorWithoutMediaAccess level), and every read and every refusal is in
// the audit log.

// recordingKeyAlgorithm names the cipher the keys are sized for.
const recordingKeyAlgorithm = "AES-128"

// recordingKeyBytes is the key length: 16 bytes, 32 hexadecimal characters.
const recordingKeyBytes = 16

// recordingKeyDTO is one recording encryption key of a device.
type recordingKeyDTO struct {
	Key               string `json:"key"`
	Algorithm         string `json:"algorithm"`
	ConfirmedByDevice bool   `json:"confirmedByDevice"`
	CreatedAt         string `json:"createdAt"`
}

// recordingKey derives the key of d's current ownership.
func (s *Server) recordingKey(d *store.Device) (recordingKeyDTO, error) {
	info := "fleetcam recording key\x00" + d.IMEI + "\x00" + strconv.FormatInt(d.Ownership, 10)
	k, err := hkdf.Key(sha256.New, s.mediaKey, nil, info, recordingKeyBytes)
	if err != nil {
		return recordingKeyDTO{}, err
	}
	return recordingKeyDTO{Key: hex.EncodeToString(k), Algorithm: recordingKeyAlgorithm, CreatedAt: isoTime(d.CreatedAt)}, nil
}

// keyReaders refuses the recording keys to viewers and to the
// editorWithoutMediaAccess level: a key is a credential, and it decrypts
// the device's recordings, so for a caller without media access reading it
// would be media access. Every refusal is in the audit log beside the
// reads, as device.recordingKey.refuse of the path's device or organization.
func (s *Server) keyReaders(c *gin.Context) {
	level := principal(c).AccessLevel
	if level != store.AccessViewer && level != store.AccessEditorWithoutMediaAccess {
		c.Next()
		return
	}
	msg := "the " + level + " access level cannot read recording encryption keys"
	entry := store.AuditChange{Action: actionKeyRefuse, EntityType: entityDevice, EntityID: c.Param("imei"), Reason: msg}
	if entry.EntityID == "" {
		entry.EntityType, entry.EntityID = entityOrganization, c.Param("orgId")
	}
	s.fail(c, s.refuse(c, &refusal{answer: forbidden("%s", msg), entries: []store.AuditChange{entry}}))
}

// Audit actions of recording keys.
const (
	actionKeyRead   = "device.recordingKey.read"
	actionKeyRefuse = "device.recordingKey.refuse"
)

// auditKeyRead records that the caller read d's recording key.
func auditKeyRead(tx *store.Tx, d *store.Device) error {
	return tx.Audit(store.AuditChange{Action: actionKeyRead, EntityType: entityDevice, EntityID: d.IMEI,
		OrganizationID: d.OrganizationID, PartnerID: d.PartnerID})
}

// deviceKeysDTO answers GET /devices/{imei}/recording-encryption-keys.
type deviceKeysDTO struct {
	KeyHistory []recordingKeyDTO `json:"keyHistory"`
	Active     recordingKeyDTO   `json:"active"`
	RequestID  string            `json:"requestId"`
}

// getRecordingKeys handles GET /devices/{imei}/recording-encryption-keys:
// the device's active key and its history (the keys of its current
// ownership, newest first).
func (s *Server) getRecordingKeys(c *gin.Context) error {
	var out deviceKeysDTO
	err := s.update(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		if out.Active, err = s.recordingKey(d); err != nil {
			return err
		}
		out.KeyHistory = []recordingKeyDTO{out.Active}
		return auditKeyRead(tx, d)
	})
	if err != nil {
		return err
	}
	out.RequestID = requestID(c)
	return okBody(c, out)
}

// orgKeysRequest is the body of POST /organizations/{orgId}/get-recording-encryption-keys.
type orgKeysRequest struct {
	IMEIs []string `json:"imeis"`
}

// orgKeyDTO is one device's active key in an organization's keys.
type orgKeyDTO struct {
	IMEI              string `json:"imei"`
	Key               string `json:"key"`
	CreatedAt         string `json:"createdAt"`
	ConfirmedByDevice bool   `json:"confirmedByDevice"`
}

// orgKeysDTO answers POST /organizations/{orgId}/get-recording-encryption-keys.
type orgKeysDTO struct {
	Keys      []orgKeyDTO `json:"keys"`
	RequestID string      `json:"requestId"`
}

// maxKeyIMEIs bounds the devices of one organization keys call.
const maxKeyIMEIs = 1000

// orgRecordingKeys handles POST /organizations/{orgId}/get-recording-encryption-keys:
// the active key of each device named in imeis, or of every device of the
// organization the caller may see when the body is empty or has no imeis.
// A named device that is not one of them is 404.
func (s *Server) orgRecordingKeys(c *gin.Context) error {
	var req orgKeysRequest
	if c.Request.ContentLength != 0 {
		if err := decode(c, &req); err != nil {
			return err
		}
	}
	var imeis []string
	if len(req.IMEIs) > 0 {
		var err error
		if imeis, err = checkIMEIList(req.IMEIs, maxKeyIMEIs); err != nil {
			return err
		}
	}
	out := orgKeysDTO{Keys: []orgKeyDTO{}}
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		var devices []store.Device
		if imeis == nil {
			if devices, _, err = tx.Devices(deviceFilter(principal(c), o.ID), store.Page{}); err != nil {
				return err
			}
		}
		for _, imei := range imeis {
			d, err := s.deviceByIMEI(c, tx, imei)
			if err != nil || d.OrganizationID != o.ID {
				return notFound("device " + imei + " of organization " + strconv.FormatInt(o.ID, 10))
			}
			devices = append(devices, *d)
		}
		for i := range devices {
			d := &devices[i]
			k, err := s.recordingKey(d)
			if err != nil {
				return err
			}
			out.Keys = append(out.Keys, orgKeyDTO{IMEI: d.IMEI, Key: k.Key, CreatedAt: k.CreatedAt})
			if err := auditKeyRead(tx, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	out.RequestID = requestID(c)
	return okBody(c, out)
}

// generatedKeyDTO answers PUT /generate-encryption-key.
type generatedKeyDTO struct {
	GeneratedKey string `json:"generatedKey"`
	RequestID    string `json:"requestId"`
}

// generateEncryptionKey handles PUT /generate-encryption-key: a strong
// random key of 32 hexadecimal characters (128 bits) from the system's
// cryptographic generator, for the caller's own use. It is not stored.
func (s *Server) generateEncryptionKey(c *gin.Context) error {
	b := make([]byte, recordingKeyBytes)
	rand.Read(b)
	return okBody(c, generatedKeyDTO{GeneratedKey: hex.EncodeToString(b), RequestID: requestID(c)})
}
