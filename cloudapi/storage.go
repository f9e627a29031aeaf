package cloudapi

import (
	"encoding/json"
	"fmt"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// sdCardDTO is the SD card a format left in the device.
type sdCardDTO struct {
	UUID         string `json:"uuid"`
	Manufacturer string `json:"manufacturer"`
}

// formatStorage handles GET /devices/{imei}/format-storage: the device
// formats its SD card (and those of paired auxiliary cameras) and answers
// with the new card UUID and its manufacturer; it also reports an
// sdCardFormatted event. The device must be online (417 otherwise). The
// method is GET, as in the reference contract, but the call erases
// recordings, so viewers may not make it and it is audited.
func (s *Server) formatStorage(c *gin.Context) error {
	var d *store.Device
	if err := s.view(c, func(tx *store.Tx) (err error) { d, err = s.device(c, tx); return err }); err != nil {
		return err
	}
	if !s.online(d.IMEI) {
		return ErrDeviceOffline
	}
	err := s.update(c, func(tx *store.Tx) error {
		return tx.Audit(store.AuditChange{Action: "device.formatStorage", EntityType: "device", EntityID: d.IMEI,
			OrganizationID: d.OrganizationID, PartnerID: d.PartnerID, Reason: "SD card format requested"})
	})
	if err != nil {
		return err
	}
	raw, err := s.commander.Send(c.Request.Context(), d.IMEI, protocol.CmdFormatStorage, nil)
	if err != nil {
		return err
	}
	var card protocol.SDCard
	if err := json.Unmarshal(raw, &card); err != nil {
		return fmt.Errorf("cloudapi: format-storage reply of %s: %w", d.IMEI, err)
	}
	return ok(c, gin.H{"sdCard": sdCardDTO{UUID: card.UUID, Manufacturer: card.Manufacturer}})
}
