// Package webhooks delivers fleetcam's webhooks: it owns the semantics of
// webhook settings and device subscriptions, renders payloads, signs them
// and delivers them with retries, without ever blocking ingest.
//
// # Outbox
//
// Producers (event and GPS ingest, device removal, privacy changes, alarms)
// record a store.Message with tx.Emit in the transaction that stores the
// fact itself. A message carries the fact typed, as it was at that moment
// (store/messagefacts.go), never a webhook body: this package renders every
// body, in one place (bodies.go), when it fans the message out, and the
// golden files in testdata/golden pin each kind's bytes. Messages recorded
// by earlier versions carry their data object already rendered and are sent
// as they are. The Dispatcher reads messages after a cursor kept in the store and,
// in the transaction that advances the cursor, queues one delivery per
// receiving URL of the organization (settings and device subscriptions
// merged). Nothing is lost or queued twice across a crash: a delivery is
// marked delivered only after a 2xx answer has been recorded, so a crash in
// between sends it again, with the same webhook-id.
//
// A delivery carries its own body, so once the stored cursor has passed a
// message nothing needs it: the dispatcher prunes such messages in short
// transactions of their own (prune.go), and the outbox holds only what is
// not yet fanned out. Finished deliveries, the delivery log, are deleted by
// the retention purge (store.PurgeSettings.WebhookDeliveryDays, the
// retention.webhookDeliveryDays setting) once they finished that long ago;
// pending ones stay until they finish.
//
// # Delivery
//
// Workers POST the JSON envelope {type, messageType?, mediaAvailable?, data}
// with a request timeout. Only 2xx is success. Failures are retried with
// exponential backoff and jitter (webhooks.initialBackoff to maxBackoff),
// honouring Retry-After (seconds or HTTP date), until maxRetryAge (at least
// 24 hours) after the delivery was queued. An unreachable, timing-out or
// overloaded (429, 503) endpoint is held back as a whole and probed one
// request at a time; a 410 Gone disables the endpoint, gives up what is
// queued for it and records why, until its URL is saved again. Deliveries
// are ordered per device and URL: a device's message is not attempted at a
// URL before its earlier ones there were delivered or given up. Each
// endpoint (organization and URL) has its own queue and at most half the
// workers, so a slow or dead URL never delays the others. Beep events are
// never sent (IsBeep).
//
// # Signatures
//
// Deliveries follow Standard Webhooks: headers webhook-id (stable per
// message and URL), webhook-timestamp (Unix seconds) and webhook-signature
// ("v1,<base64 HMAC-SHA256 of id.timestamp.body>"). The key is the
// organization's secret, "whsec_" followed by base64 of the key bytes; it is
// shown once when created or rotated and is derived from the server key and
// a stored salt, never stored itself. For SecretGrace after a rotation
// deliveries carry a signature under each secret, separated by a space.
//
// A receiver verifies a delivery like this (Verify does exactly this):
//
//	body, _ := io.ReadAll(r.Body) // the raw bytes, before decoding
//	id := r.Header.Get("webhook-id")
//	ts := r.Header.Get("webhook-timestamp")
//	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
//	m := hmac.New(sha256.New, key)
//	m.Write([]byte(id + "." + ts + "."))
//	m.Write(body)
//	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
//	ok := false
//	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
//		ok = ok || hmac.Equal([]byte(sig), []byte(want))
//	}
//	// Also refuse a timestamp more than a few minutes from now (replays),
//	// and deduplicate on id: a message may arrive more than once.
//
// A delivery to an organization with an ssoSecret (one a partner created
// through the API) also carries X-Surfsight-Signature, the signature of the
// public contract existing integrations verify: hex HMAC-SHA512 keyed with
// the ssoSecret over the body as sent followed by the URL as configured
// (SurfsightSignature). The ssoSecret, too, is derived from the server key
// and the organization's stored salt (SSOSecret).
//
// # URL safety
//
// See CheckURL: webhook URLs are absolute https URLs to public addresses
// (plain http for an organization that opts in), checked when saved and
// again on every connection's resolved address; redirects are not
// followed. configs.Webhooks.AllowPrivateTargets lifts the address rules
// for tests and local development.
package webhooks
