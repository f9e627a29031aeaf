package cloudapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Error names of the API; the body of every error response carries one.
const (
	nameBadRequest        = "BadRequestError"
	nameUnauthorized      = "UnauthorizedError"
	nameForbidden         = "ForbiddenError"
	nameNotFound          = "NotFoundError"
	nameMethodNotAllowed  = "MethodNotAllowedError"
	nameConflict          = "ConflictError"
	nameExpectationFailed = "ExpectationFailedError"
	nameTooManyRequests   = "TooManyRequestsError"
	nameTooLarge          = "PayloadTooLargeError"
	nameTimeout           = "TimeoutError"
	nameUnavailable       = "ServiceUnavailableError"
	nameUnknown           = "UnknownError"
	// NameNoRecordingAvailable is the 404 a virtual event gets when the device holds no recording.
	NameNoRecordingAvailable = "NoRecordingAvailableError"
)

// APIError is an error with the HTTP status and error name it is answered with.
type APIError struct {
	Status  int
	Name    string
	Message string
}

func (e *APIError) Error() string { return e.Name + ": " + e.Message }

func apiErr(status int, name, format string, args ...any) *APIError {
	return &APIError{Status: status, Name: name, Message: fmt.Sprintf(format, args...)}
}

// badField is the 400 for a field that breaks a rule; the message names both.
func badField(field, rule string) *APIError {
	return apiErr(http.StatusBadRequest, nameBadRequest, "%s %s", field, rule)
}

func badRequest(format string, args ...any) *APIError {
	return apiErr(http.StatusBadRequest, nameBadRequest, format, args...)
}

func notFound(what string) *APIError {
	return apiErr(http.StatusNotFound, nameNotFound, "%s not found", what)
}

func forbidden(format string, args ...any) *APIError {
	return apiErr(http.StatusForbidden, nameForbidden, format, args...)
}

func unauthorized(format string, args ...any) *APIError {
	return apiErr(http.StatusUnauthorized, nameUnauthorized, format, args...)
}

func conflict(format string, args ...any) *APIError {
	return apiErr(http.StatusConflict, nameConflict, format, args...)
}

// ErrDeviceOffline is what a Commander returns when a command needs an
// online device and the device is not connected; answered with 417.
var ErrDeviceOffline = errors.New("cloudapi: device offline")

// ErrCommandTimeout is what a Commander returns when the device did not
// answer in time; answered with 417 as well, since the device must be reachable.
var ErrCommandTimeout = errors.New("cloudapi: device did not answer in time")

// ErrCommandFailed is what a Commander returns when the device answered
// that it could not carry out the command; answered with 417.
var ErrCommandFailed = errors.New("cloudapi: device could not carry out the command")

// ErrDeviceUnreachable is what a Commander of a node of a cluster returns
// when the device is not connected to this node and the other nodes
// cannot be reached to find it; answered with 503, since it may well be
// online.
var ErrDeviceUnreachable = errors.New("cloudapi: the device's node cannot be reached")

// statusOf chooses the HTTP status and error name of err. It is the one
// place where errors become responses.
func statusOf(err error) *APIError {
	var ae *APIError
	var se *store.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &se):
		return storeErr(se)
	case errors.Is(err, ErrDeviceOffline):
		return apiErr(http.StatusExpectationFailed, nameExpectationFailed, "the device must be online for this operation")
	case errors.Is(err, ErrCommandTimeout):
		return apiErr(http.StatusExpectationFailed, nameExpectationFailed, "the device did not answer in time")
	case errors.Is(err, ErrCommandFailed):
		return apiErr(http.StatusExpectationFailed, nameExpectationFailed, "the device could not carry out the command")
	case errors.Is(err, ErrDeviceUnreachable):
		return apiErr(http.StatusServiceUnavailable, nameUnavailable,
			"the device is not connected to this node and the other nodes of the cluster cannot be reached now; retry shortly")
	case errors.Is(err, ErrNodesUnreachable):
		return apiErr(http.StatusServiceUnavailable, nameUnavailable,
			"the other nodes of the cluster cannot be reached now; retry shortly")
	case errors.Is(err, store.ErrTxConflict):
		// Other writes of the same records kept winning for the whole
		// retry window: the server is busy, the request itself is sound.
		return apiErr(http.StatusServiceUnavailable, nameUnavailable,
			"other writes to the same records kept the store busy; retry shortly")
	case errors.Is(err, errPasswordBusy):
		return apiErr(http.StatusTooManyRequests, nameTooManyRequests, "the server is busy checking other passwords; retry in a second")
	case errors.Is(err, context.DeadlineExceeded):
		return apiErr(http.StatusServiceUnavailable, nameTimeout, "the request took too long; paginate with limit and offset")
	case errors.Is(err, context.Canceled):
		return apiErr(http.StatusServiceUnavailable, nameUnavailable, "the request was cancelled")
	}
	return apiErr(http.StatusInternalServerError, nameUnknown, "unknown error has occurred")
}

// abandoned reports whether err is the end of the call's own context, as
// opposed to a deadline or cancellation of some inner operation.
func abandoned(c *gin.Context, err error) bool {
	done := c.Request.Context().Err()
	return done != nil && errors.Is(err, done)
}

// storeErr is the answer to a store error: its kind chooses the status and
// name, its message ("organization 7 not found", "lat must be from -90 to
// 90") is the message. A kind the API does not know is a 500.
func storeErr(se *store.Error) *APIError {
	switch se.Kind {
	case store.ErrNotFound:
		return apiErr(http.StatusNotFound, nameNotFound, "%s", se.Message())
	case store.ErrConflict:
		return apiErr(http.StatusConflict, nameConflict, "%s", se.Message())
	case store.ErrInvalid:
		if se.Field != "" {
			return badField(se.Field, se.Rule)
		}
		return badRequest("%s", se.Rule)
	case store.ErrUnavailable:
		return apiErr(http.StatusServiceUnavailable, nameUnavailable, "%s", se.Message())
	}
	return apiErr(http.StatusInternalServerError, nameUnknown, "unknown error has occurred")
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error     string `json:"error"`
	Message   string `json:"message"`
	RequestID string `json:"requestId"`
}

// handle adapts a handler to gin. A handler reads the request, validates
// it, calls the store or the device and answers with one of the answer
// helpers (ok, created, okPage...); an error it returns is answered here,
// by fail, so that a route's handler says what it does and the mapping of
// errors to answers stays in one place.
func (s *Server) handle(h func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			s.fail(c, err)
		}
	}
}

// fail answers err and stops the handler chain. Unknown errors are logged
// with the request id; their text never reaches the caller. A call that
// failed because its own context ended (the client went away, or the call
// ran out of time and withTimeout has answered it) is no fault of the
// server: it is logged at info, not as an error.
func (s *Server) fail(c *gin.Context, err error) {
	ae := statusOf(err)
	switch {
	case abandoned(c, err):
		s.log.Info("request abandoned", "requestId", requestID(c), "route", c.FullPath(), "err", err)
	case ae.Status >= 500:
		s.log.Error("request failed", "requestId", requestID(c), "route", c.FullPath(), "err", err)
	}
	if ae.Status == http.StatusTooManyRequests && c.Writer.Header().Get("Retry-After") == "" {
		c.Header("Retry-After", "1")
	}
	c.AbortWithStatusJSON(ae.Status, errorBody{Error: ae.Name, Message: ae.Message, RequestID: requestID(c)})
}
