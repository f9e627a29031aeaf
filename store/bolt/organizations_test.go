package bolt_test

import (
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/fleetcam/fleetcam/store"
)

// Organizations are their JSON under their 8-byte id; ids go on from the
// bucket's sequence. Organizations an older version wrote are read,
// listed and updated in place.
func TestOrganizationsLayout(t *testing.T) {
	f := newFixture(t)
	f.put("organizations", be8(9), fmt.Appendf(nil, `{"id":9,"name":"Old fleet","partnerId":%d,"partnerIds":[%[1]d],`+
		`"isOrganizationProfileEnabled":false,"exclusivePartnerOnly":true,"ssoSalt":"c2FsdA==",`+
		`"retention":{"purgeDays":14,"purgeDaysRearCamera":3},"createdAt":"2025-06-01T08:00:00Z"}`, f.partner.ID))
	f.setSequence("organizations", 9)

	var added *Organization
	f.update(func(tx *Tx) error {
		var err error
		if added, err = tx.CreateOrganization(f.partner.ID, "New fleet", nil); err != nil {
			return err
		}
		o, err := tx.Organization(9)
		if err != nil {
			return err
		}
		o.Name = "Renamed fleet"
		return tx.UpdateOrganization(o)
	})
	if added.ID != 10 {
		t.Errorf("new organization id %d, want 10", added.ID)
	}
	for id, want := range map[int64]string{9: "Renamed fleet", 10: "New fleet"} {
		var stored Organization
		if err := json.Unmarshal(f.get("organizations", be8(id)), &stored); err != nil || stored.Name != want ||
			stored.PartnerID != f.partner.ID {
			t.Errorf("organization %d stored as %+v %v, want %q", id, stored, err, want)
		}
	}
	f.view(func(tx *Tx) error {
		o, err := tx.Organization(9)
		if err != nil || string(o.SSOSalt) != "salt" || o.Retention.PurgeDays != 14 || o.Retention.MediaPurgeDays(2) != 3 {
			t.Errorf("organization written before %+v %v", o, err)
		}
		list, n, err := tx.Organizations(OrganizationFilter{PartnerID: f.partner.ID}, Page{Offset: 1})
		if err != nil || n != 3 || len(list) != 2 || list[0].ID != 9 || list[1].ID != 10 {
			t.Errorf("organizations of the partner after the first %+v (%d) %v, want 9 and 10", list, n, err)
		}
		return nil
	})
}
