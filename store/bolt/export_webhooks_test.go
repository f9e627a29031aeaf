package bolt

// The codec of the webhook queue's keys and values, for the tests of
// package bolt_test.
var (
	QueueKey        = queueKey
	QueueValue      = queueValue
	ParseQueueEntry = parseQueueEntry
)
