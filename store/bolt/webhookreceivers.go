package bolt

import (
	"bytes"
	"slices"
	"strings"

	"github.com/fleetcam/fleetcam/store"
)

// The webhook receivers index: bucket webhook_receivers, org → the types
// with a URL, comma-separated. Has reads it on every GPS write without
// allocating beyond the key.

// WebhookReceivers implements store.WebhookRecords.
func (t *tx) WebhookReceivers() store.WebhookReceiverRecords { return webhookReceivers{t} }

type webhookReceivers struct{ t *tx }

// Has implements store.WebhookReceiverRecords.
func (r webhookReceivers) Has(orgID int64, typ string) (bool, error) {
	v := r.t.bucket(bucketWebhookReceivers).Get(itob(orgID))
	for len(v) > 0 {
		t, rest, _ := bytes.Cut(v, []byte{','})
		if string(t) == typ {
			return true, nil
		}
		v = rest
	}
	return false, nil
}

// Put implements store.WebhookReceiverRecords.
func (r webhookReceivers) Put(orgID int64, types []string) error {
	b := r.t.bucket(bucketWebhookReceivers)
	if len(types) == 0 {
		return b.Delete(itob(orgID))
	}
	return b.Put(itob(orgID), []byte(strings.Join(types, ",")))
}

// Organizations implements store.WebhookReceiverRecords: the organizations
// of the keys of the settings, subscriptions and receivers buckets, all of
// which start with the organization.
func (r webhookReceivers) Organizations() ([]int64, error) {
	var orgs []int64
	for _, name := range [][]byte{bucketWebhookSettings, bucketWebhookSubs, bucketWebhookReceivers} {
		c := r.t.bucket(name).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) >= 8 {
				orgs = append(orgs, btoi(k[:8]))
			}
		}
	}
	slices.Sort(orgs)
	return slices.Compact(orgs), nil
}
