package cloudapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestAddDevicesConcurrently: devices added to one organization by
// several callers at once (the nodes of a cluster, a partner's import
// running in parallel) are all added. On PostgreSQL those adds abort one
// another (serializable snapshot isolation); a read that lost such a
// conflict is no device not found, and a transaction whose failed read
// its rules went on without (PostgreSQL then refuses every later
// statement, 25P02) runs again like any other that lost a conflict.
func TestAddDevicesConcurrently(t *testing.T) {
	t.Parallel()
	const callers, each = 4, 50
	e := newEnv(t)
	org := e.newOrg(e.partnerToken, "Acme")
	failed := make(chan string, callers*each)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				raw, _ := json.Marshal(map[string]any{"imei": testIMEI(1000 + c*each + i), "name": "Truck"})
				req, _ := http.NewRequest("POST", e.srv.URL+orgPath(org.id, "/devices"), bytes.NewReader(raw))
				req.Header.Set("Authorization", "Bearer "+e.partnerToken)
				req.Header.Set("Content-Type", "application/json")
				r, err := e.trySend(req)
				switch {
				case err != nil:
					failed <- err.Error()
				case r.status != http.StatusOK:
					failed <- fmt.Sprintf("%d %s", r.status, r.raw)
				}
			}
		})
	}
	wg.Wait()
	close(failed)
	n := 0
	for f := range failed {
		if n++; n <= 3 {
			t.Errorf("add device: %s", f)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d adds failed", n, callers*each)
	}
}
