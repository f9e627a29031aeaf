package cloudapi

import (
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// Every time a request gives, as a query parameter or a body member, is an
// RFC 3339 date-time with its zone: Z for UTC or an offset such as +02:00,
// with or without fractional seconds (2026-03-01T12:00:00Z,
// 2026-03-01T12:00:00.000Z, 2026-03-01T14:00:00+02:00). A time without a
// zone is refused rather than guessed. The one exception is the timestamp
// claim of an SSO token, whose format the SSO contract fixes (sso.go).

// timeRule is how a 400 about a time states the rule.
const timeRule = "must be an ISO 8601 date-time with a zone (RFC 3339), such as 2026-03-01T12:00:00Z or 2026-03-01T14:00:00+02:00"

// parseAPITime reads a time of a request by the rule above; the result is
// in UTC.
func parseAPITime(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, badField(field, "is required and "+timeRule)
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		if _, local := time.Parse("2006-01-02T15:04:05.999999999", v); local == nil {
			return time.Time{}, badField(field, "has no time zone: it "+timeRule)
		}
		return time.Time{}, badField(field, timeRule+", not "+quoteShort(v))
	}
	return t.UTC(), nil
}

// quoteShort quotes a value for an error message, cut to a readable length.
func quoteShort(v string) string {
	const max = 40
	if len(v) > max {
		return strconv.Quote(v[:max]) + "…"
	}
	return strconv.Quote(v)
}

// queryRange reads the optional start and end query parameters of a list
// call: each by parseAPITime, and end not before start when both are given.
// A zero time is one that was not given.
func queryRange(c *gin.Context) (start, end time.Time, err error) {
	if start, err = optionalQueryTime(c, "start"); err != nil {
		return start, end, err
	}
	if end, err = optionalQueryTime(c, "end"); err != nil {
		return start, end, err
	}
	return start, end, checkOrder(start, end)
}

// optionalQueryTime reads the query parameter name by parseAPITime; left
// out it is the zero time, given empty it is a 400.
func optionalQueryTime(c *gin.Context, name string) (time.Time, error) {
	v, given := c.GetQuery(name)
	switch {
	case !given:
		return time.Time{}, nil
	case v == "":
		return time.Time{}, badField(name, "is given empty: leave it out, or it "+timeRule)
	}
	return parseAPITime(name, v)
}

// checkOrder refuses an end before its start; a zero time is not given.
func checkOrder(start, end time.Time) error {
	if !start.IsZero() && !end.IsZero() && end.Before(start) {
		return badField("end", "must not be before start")
	}
	return nil
}
