package store

// WebhookRecords are the record sets of the audit log, messages, the webhook outbox and deliveries, and webhook settings, whose rules are in audit.go, messages.go, outbox.go, webhooks.go, webhookreceivers.go.
type WebhookRecords interface{}
