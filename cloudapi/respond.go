package cloudapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// dataBody wraps a data call's answer.
type dataBody struct {
	Data      any    `json:"data"`
	RequestID string `json:"requestId"`
}

// Metadata describes a page of a paginated call; Count is the total.
type Metadata struct {
	Count  int `json:"count"`
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

type pageBody struct {
	Data      any      `json:"data"`
	Metadata  Metadata `json:"metadata"`
	RequestID string   `json:"requestId"`
}

// The answer helpers below write a handler's answer and return nil, so
// that a handler (see handle) ends with return ok(c, out).

// ok answers {"data": data}.
func ok(c *gin.Context, data any) error {
	c.JSON(http.StatusOK, dataBody{Data: data, RequestID: requestID(c)})
	return nil
}

// okBody answers 200 with body as it is: a body of the reference
// contract's own shape, which carries the requestId itself.
func okBody(c *gin.Context, body any) error {
	c.JSON(http.StatusOK, body)
	return nil
}

// created answers 201 {"data": data}.
func created(c *gin.Context, data any) error {
	c.JSON(http.StatusCreated, dataBody{Data: data, RequestID: requestID(c)})
	return nil
}

// noContent answers 204 without a body, where the reference contract
// answers a change that has nothing to tell so.
func noContent(c *gin.Context) error {
	c.Status(http.StatusNoContent)
	return nil
}

// okPage answers a page of a paginated call. items must be a slice; a nil
// slice is sent as [].
func okPage[T any](c *gin.Context, items []T, total int, p store.Page) error {
	if items == nil {
		items = []T{}
	}
	c.JSON(http.StatusOK, pageBody{Data: items, Metadata: Metadata{Count: total, Limit: p.Limit, Offset: p.Offset}, RequestID: requestID(c)})
	return nil
}

// page reads limit and offset from the query: limit defaults to the
// configured page size and may not exceed the maximum; offset defaults to 0.
func (s *Server) page(c *gin.Context) (store.Page, error) {
	return s.pageFrom(c.Query("limit"), c.Query("offset"), c.Request.URL.Query().Has("limit"), c.Request.URL.Query().Has("offset"))
}

func (s *Server) pageFrom(limit, offset string, hasLimit, hasOffset bool) (store.Page, error) {
	p := store.Page{Limit: s.cfg.HTTP.DefaultPageSize}
	if hasLimit {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > s.cfg.HTTP.MaxPageSize {
			return p, badField("limit", fmt.Sprintf("must be an integer from 1 to %d", s.cfg.HTTP.MaxPageSize))
		}
		p.Limit = n
	}
	if hasOffset {
		n, err := strconv.Atoi(offset)
		if err != nil || n < 0 {
			return p, badField("offset", "must be an integer of 0 or more")
		}
		p.Offset = n
	}
	return p, nil
}

// checkPage validates limit and offset given in a JSON body (nil: absent).
func (s *Server) checkPage(limit, offset *int) (store.Page, error) {
	var l, o string
	if limit != nil {
		l = strconv.Itoa(*limit)
	}
	if offset != nil {
		o = strconv.Itoa(*offset)
	}
	return s.pageFrom(l, o, limit != nil, offset != nil)
}

// decode reads the JSON body strictly into dst: unknown fields, wrong types,
// trailing data, an empty body, a member given twice and a null where dst
// has none (see checkBody) are 400 errors that name the field.
func decode(c *gin.Context, dst any) error {
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apiErr(http.StatusRequestEntityTooLarge, nameTooLarge, "the request body exceeds %d bytes", mbe.Limit)
		}
		return badRequest("the request body could not be read")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return badRequest("the request body must be a JSON object")
	}
	if !utf8.Valid(raw) {
		return badRequest("the request body is not valid UTF-8 (offset %d)", invalidUTF8At(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return badRequest("the request body must hold one JSON value")
	}
	return checkBody(raw, reflect.TypeOf(dst))
}

// invalidUTF8At is the offset of the first byte of b that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// jsonError turns a decoding error into a 400 that names the field.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badRequest("the request body is not valid JSON (offset %d)", syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badRequest("the request body must be a JSON %s", jsonKind(typ.Type.Kind().String()))
		}
		return badField(field, "must be "+article(jsonKind(typ.Type.Kind().String())))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("the request body is truncated JSON")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badField(name, "is not a known field")
	}
	return badRequest("the request body is not valid: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "slice", "array":
		return "array"
	case "struct", "map", "ptr":
		return "object"
	}
	return goKind
}

func article(kind string) string {
	switch kind[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + kind
	}
	return "a " + kind
}

// pathInt parses a numeric path parameter; a malformed one is 404 since no
// such resource can exist.
func pathInt(c *gin.Context, name string) (int64, error) {
	v, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || v <= 0 {
		return 0, notFound(name + " " + strconv.Quote(c.Param(name)))
	}
	return v, nil
}
