package cloudapi

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math/big"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// PIN codes: the admin PIN unlocks a device's settings menu, the driver
// PIN its driver functions. They are secrets: fleetcam keeps only salted
// PBKDF2 hashes, which the device verifies typed PINs against
// (docs/device-protocol.md), so a PIN can be shown only when it is made.
// The contract's "retrieve the PIN codes" calls therefore issue new PINs,
// shown once in the answer; the earlier PINs stop working once the device
// applies its new configuration. The caller confirms with its password.

// pinLength is the digits of a PIN fleetcam issues.
const pinLength = 6

// pinCodesRequest is the body of the PIN code calls.
type pinCodesRequest struct {
	Password *string `json:"password"`
}

// pinValue wraps one PIN in the answer.
type pinValue struct {
	Value string `json:"value"`
}

// pinCodesDTO is the answer: the new PINs, in clear this once.
type pinCodesDTO struct {
	AdminPin  pinValue `json:"adminPin"`
	DriverPin pinValue `json:"driverPin"`
}

// newPin returns pinLength random digits.
func newPin() (string, error) {
	max := big.NewInt(1)
	for range pinLength {
		max.Mul(max, big.NewInt(10))
	}
	n, err := rand.Int(rand.Reader, max)
	if err != nil {
		return "", fmt.Errorf("cloudapi: draw a PIN: %w", err)
	}
	return fmt.Sprintf("%0*d", pinLength, n), nil
}

// issuePins draws new admin and driver PINs and returns them with their
// salted hashes, as stored.
func (s *Server) issuePins() (pinCodesDTO, *store.PinCodes, error) {
	admin, err := newPin()
	if err != nil {
		return pinCodesDTO{}, nil, err
	}
	driver, err := newPin()
	if err != nil {
		return pinCodesDTO{}, nil, err
	}
	salt := make([]byte, 16)
	rand.Read(salt)
	saltText := base64.RawURLEncoding.EncodeToString(salt)
	rec := &store.PinCodes{Salt: saltText, AdminPinHash: protocol.PinHash(saltText, admin),
		DriverPinHash: protocol.PinHash(saltText, driver), SetAt: s.now()}
	return pinCodesDTO{AdminPin: pinValue{admin}, DriverPin: pinValue{driver}}, rec, nil
}

// confirmPassword checks the body's password against the calling user's:
// a caller without a password of its own (an SSO organization admin) or
// with a wrong one is refused (403).
func (s *Server) confirmPassword(c *gin.Context) error {
	var req pinCodesRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Password == nil || *req.Password == "" {
		return badField("password", "is required: the password of the calling user")
	}
	p := principal(c)
	if p.Kind != kindUser {
		return forbidden("PIN codes need the password of a signed-in user")
	}
	var hash []byte
	err := s.view(c, func(tx *store.Tx) error {
		u, err := tx.User(p.UserID)
		if err == nil {
			hash = u.PasswordHash
		}
		return err
	})
	if err != nil {
		return err
	}
	match, err := s.passwords.compare(c.Request.Context(), hash, *req.Password)
	if err != nil {
		return err
	}
	if !match {
		return forbidden("the password is wrong")
	}
	return nil
}

// confirmedPins confirms the caller's password and draws new PINs.
func (s *Server) confirmedPins(c *gin.Context) (pinCodesDTO, *store.PinCodes, error) {
	if err := s.confirmPassword(c); err != nil {
		return pinCodesDTO{}, nil, err
	}
	return s.issuePins()
}

// postDevicePinCodes handles POST /devices/{imei}/pin-codes: new PINs for
// the device, delivered to it with its configuration.
func (s *Server) postDevicePinCodes(c *gin.Context) error {
	out, rec, err := s.confirmedPins(c)
	if err != nil {
		return err
	}
	_, err = s.writeControl(c, s.pathDevice(c), "device.pinCodes", func(ctl *store.DeviceControl) error {
		ctl.PinCodes = rec
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// postOrgPinCodes handles POST /organizations/{orgId}/default-settings/pin-codes:
// new default PINs of the organization, which every device without PINs
// of its own takes (with the organization profile enabled, every device).
func (s *Server) postOrgPinCodes(c *gin.Context) error {
	out, rec, err := s.confirmedPins(c)
	if err != nil {
		return err
	}
	err = s.writeOrgSettings(c, "organization.pinCodes", func(os *store.OrgSettings) error {
		if os.Control == nil {
			os.Control = &store.DeviceControl{}
		}
		os.Control.PinCodes = rec
		return nil
	}, "device.pinCodes", func(ds *store.DeviceSettings) error {
		if ds.Control != nil {
			ds.Control.PinCodes = nil // the organization's PINs apply
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
