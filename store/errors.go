package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test them with errors.Is; the API maps them to
// HTTP statuses in one place. The store returns them as an *Error that says
// what is missing, what conflicts or which field breaks which rule.
var (
	// ErrNotFound means the record does not exist or is not visible to the caller.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict means the write would break a uniqueness rule.
	ErrConflict = errors.New("store: conflict")
	// ErrInvalid means the write carries a value the store refuses.
	ErrInvalid = errors.New("store: invalid")
	// ErrUnavailable means the storage engine could not be reached, or lost
	// the connection during the transaction: nothing was read, and a write
	// may or may not have committed. The caller may try again.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrTxConflict means the engine aborted the transaction for a
	// conflict with another that ran at the same time (PostgreSQL's
	// serialisation failures and deadlocks): nothing of it was written, and
	// the whole transaction runs again. The group commit reruns its batch
	// on it instead of failing the job that met it, since every job after
	// it met it too.
	ErrTxConflict = errors.New("store: transaction conflict")
)

// Rules shared by the store, the API and the device protocol; a message
// reads "<field> <rule>".
const (
	// IMEIShape is what an IMEI is, for messages that do not start with "must".
	IMEIShape = "15 digits whose last is the Luhn check digit"
	// RuleIMEI is the rule of an IMEI.
	RuleIMEI = "must be " + IMEIShape
	// RuleCameraID is the rule of a camera id: 1 road-facing, 2 in-cabin,
	// MinAuxCameraID and above auxiliary (ValidCameraID).
	RuleCameraID = "must be 1 (road-facing), 2 (in-cabin) or 50 and above (auxiliary)"
)

// Error is a store error: its Kind (one of the sentinels) and what it is
// about. errors.Is(err, Kind) holds, so callers keep testing the sentinels;
// errors.As gives the API and the broker the field and rule of a message.
type Error struct {
	// Kind is ErrNotFound, ErrConflict, ErrInvalid or ErrUnavailable.
	Kind error
	// Field names the value that breaks Rule by its API name
	// ("files[0].cameraId"); empty when the rule is about the record as a whole.
	Field string
	// Rule is the rule broken ("must be from -90 to 90") or, for
	// ErrConflict, the conflict ("device X is already in an organization").
	Rule string
	// What names the missing record of an ErrNotFound ("device X").
	What string
	// cause is the engine's error behind an ErrUnavailable.
	cause error
}

// Invalid is the ErrInvalid of a field that breaks a rule; field may be
// empty when the rule is about the record as a whole.
func Invalid(field, rule string, args ...any) error {
	return &Error{Kind: ErrInvalid, Field: field, Rule: sprintf(rule, args)}
}

// NotFound is the ErrNotFound of the record the format names ("device %s").
func NotFound(what string, args ...any) error {
	return &Error{Kind: ErrNotFound, What: sprintf(what, args)}
}

// NotFoundAs is err, or the ErrNotFound of the record the format names
// when err is an ErrNotFound: for an engine's lookup that does not name
// what it missed. Its arguments are made on every call, found or not: not
// for the lookups of device ingest.
func NotFoundAs(err error, what string, args ...any) error {
	if errors.Is(err, ErrNotFound) {
		return NotFound(what, args...)
	}
	return err
}

// Conflict is the ErrConflict the format describes.
func Conflict(rule string, args ...any) error {
	return &Error{Kind: ErrConflict, Rule: sprintf(rule, args)}
}

// Unavailable is the ErrUnavailable of an engine that could not be reached
// or lost its connection; cause is kept for errors.Is and the logs.
func Unavailable(cause error) error {
	return &Error{Kind: ErrUnavailable, Rule: "the database is unavailable; try again", cause: cause}
}

func sprintf(format string, args []any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}

// Message is the error for people, without the kind: "device X not found",
// "lat must be from -90 to 90". The API and the device protocol answer it.
func (e *Error) Message() string {
	switch {
	case e.Kind == ErrNotFound && e.What == "":
		return "not found"
	case e.Kind == ErrNotFound:
		return e.What + " not found"
	case e.Field == "":
		return e.Rule
	case e.Rule == "":
		return e.Field
	}
	return e.Field + " " + e.Rule
}

// Error is the message followed by the kind's text (and an engine's cause),
// for logs:
// "device X: store: not found", "lat must be from -90 to 90: store: invalid".
func (e *Error) Error() string {
	msg := e.Message()
	if e.Kind == ErrNotFound {
		msg = e.What
	}
	if msg == "" {
		msg = e.Kind.Error()
	} else {
		msg += ": " + e.Kind.Error()
	}
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	return msg
}

// Unwrap returns the kind (and the cause, for an ErrUnavailable), so
// errors.Is(err, ErrInvalid) and the like hold.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Kind, e.cause}
	}
	return []error{e.Kind}
}

// within names the field of an *Error inside parent: "lat" within
// "samples[3]" is "samples[3].lat". Other errors are returned unchanged.
func within(parent string, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Field == "" {
		return err
	}
	inner := *e
	inner.Field = parent + "." + e.Field
	return &inner
}

// missing names what a lookup did not find: getJSON's unnamed ErrNotFound
// becomes NotFound(what, args...); any other error is wrapped with what.
func missing(err error, what string, args ...any) error {
	if isNotFound(err) {
		return NotFound(what, args...)
	}
	return fmt.Errorf("%s: %w", sprintf(what, args), err)
}
