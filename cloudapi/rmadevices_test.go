package cloudapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestRMADevices: the report lists the caller's refurbished devices with
// when each was marked, filtered, sorted and paginated; another partner's
// are not in it, an organization user sees its organization's only, and a
// device whose mark was cleared drops out.
func TestRMADevices(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	first, second, other := e.devices[0], e.devices[2], e.devices[3] // org, org, org2
	e.fleetUpdate(func(tx *store.Tx) error { return tx.SetRefurbished(first, true) })
	marked := e.clock.Now()
	e.clock.Advance(time.Hour)
	e.fleetUpdate(func(tx *store.Tx) error {
		for _, imei := range []string{second, other, e.rivalDevices[0]} {
			if err := tx.SetRefurbished(imei, true); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(token, query string) *response {
		return e.do("GET", "/v2/devices/rma-devices"+query, token, nil).want(http.StatusOK)
	}
	imeis := func(r *response) []string {
		var out []string
		for i := range r.list("data") {
			out = append(out, r.str("data."+strconv.Itoa(i)+".imei"))
		}
		return out
	}

	r := list(e.partnerToken, "")
	if got := imeis(r); len(got) != 3 || got[2] != first || r.num("metadata.count") != 3 {
		t.Fatalf("the partner's report %s; want its three devices, the first marked last (desc)", r.raw)
	}
	if r.str("data.2.rmaUpdatedAt") != isoTime(marked) || r.str("data.2.organizationName") != e.org.Name ||
		r.id("data.2.organizationId") != e.org.ID {
		t.Fatalf("the first device's row %s", r.raw)
	}
	if got := imeis(list(e.partnerToken, "?sort=imei&order=asc&limit=1&offset=1")); len(got) != 1 || got[0] != second {
		t.Fatalf("the second by IMEI: %v", got)
	}
	if got := imeis(list(e.partnerToken, "?organizationName=TWO")); len(got) != 1 || got[0] != other {
		t.Fatalf("by organization name: %v", got)
	}
	window := "?rmaUpdatedAtStart=" + isoTime(marked.Add(-time.Minute)) + "&rmaUpdatedAtEnd=" + isoTime(marked.Add(time.Minute))
	if got := imeis(list(e.partnerToken, window)); len(got) != 1 || got[0] != first {
		t.Fatalf("marked in the first minute: %v", got)
	}
	if got := imeis(list(e.adminToken, "")); len(got) != 2 {
		t.Fatalf("an organization user sees %v, want its organization's two", got)
	}
	if got := imeis(list(e.rivalToken, "")); len(got) != 1 || got[0] != e.rivalDevices[0] {
		t.Fatalf("the rival sees %v", got)
	}

	e.fleetUpdate(func(tx *store.Tx) error { return tx.SetRefurbished(first, false) })
	if got := imeis(list(e.partnerToken, "")); len(got) != 2 {
		t.Fatalf("after the mark was cleared: %v", got)
	}
	e.do("GET", "/v2/devices/rma-devices?rmaUpdatedAtStart="+isoTime(marked), e.partnerToken, nil).
		wantError(400, nameBadRequest, "rmaUpdatedAtEnd")
	e.do("GET", "/v2/devices/rma-devices?sort=colour", e.partnerToken, nil).wantError(400, nameBadRequest, "sort")
}
