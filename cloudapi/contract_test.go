package cloudapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"
)

// The reference contract (testdata/reference/surfsight-openapi-gateway.json,
// its facts without its prose; docs/api.md) judges every answer an API test
// receives: testEnv.trySend hands each one to checkContract, and a violation
// fails the test that received it.
//
// The contract declares only some error statuses per operation, while fleetcam
// answers its error conventions (docs/api.md: 401, 403, 404, 409, 417, 429 …)
// on every operation where they apply. The rule: an error status the operation does not declare
// is validated against the contract's shared response for that status
// (components/responses, see sharedErrors); a status with no shared response
// at all (413 PayloadTooLargeError, 503) must still be the API's error
// envelope, the contract's components/schemas/error. A 2xx the operation does
// not declare is a violation like a wrong member. A 204 the operation
// declares has no body, as HTTP says, whatever content the contract gives it.
// Examples in the contract contradict its schemas, so only schemas are
// validated.
//
// Where the contract contradicts one of the API's rules (docs/api.md), the
// rule wins; those places, and the contract's own defects, are the
// deviations below, amended in the loaded contract before any answer is
// checked.

// sharedErrors names the shared error response of the contract for each error status.
var sharedErrors = map[int]string{
	http.StatusBadRequest:          "badRequestError",
	http.StatusUnauthorized:        "unauthorizedError",
	http.StatusForbidden:           "forbiddenError",
	http.StatusNotFound:            "notFoundError",
	http.StatusConflict:            "conflictError",
	http.StatusExpectationFailed:   "expectationFailedError",
	http.StatusLocked:              "LockedError",
	http.StatusTooManyRequests:     "tooManyRequestsError",
	http.StatusInternalServerError: "internalServerError",
}

var contract struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error

	mu sync.Mutex
	// validated counts, per operation ("GET /devices/{imei}"), the 2xx
	// answers that were checked and conformed.
	validated map[string]int
}

// loadContract reads the reference contract once and applies the deviations.
func loadContract() (*openapi3.T, routers.Router, error) {
	contract.once.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile("testdata/reference/surfsight-openapi-gateway.json")
		if err != nil {
			contract.err = err
			return
		}
		for _, d := range deviations {
			for _, op := range d.operations {
				method, path, _ := strings.Cut(op, " ")
				if item := doc.Paths.Find(path); item == nil || item.GetOperation(method) == nil {
					contract.err = fmt.Errorf("deviation at %s names %s, which the contract does not have", d.pointer, op)
					return
				}
			}
			if err := d.amend(doc); err != nil {
				contract.err = fmt.Errorf("deviation at %s: %w", d.pointer, err)
				return
			}
		}
		doc.Servers = openapi3.Servers{{URL: "/v2"}}
		contract.doc = doc
		contract.router, contract.err = legacyrouter.NewRouter(doc, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation())
		contract.validated = map[string]int{}
	})
	return contract.doc, contract.router, contract.err
}

// checkContract validates one answer against the reference contract. It
// returns the operation (empty when the contract does not have the route) and
// the violation, if any.
func checkContract(req *http.Request, status int, header http.Header, raw []byte) (string, error) {
	doc, router, err := loadContract()
	if err != nil {
		return "", fmt.Errorf("reference contract: %w", err)
	}
	r := req.Clone(context.Background())
	r.Host = ""
	r.URL.Host, r.URL.Scheme = "", ""
	route, params, err := router.FindRoute(r)
	if err != nil {
		return "", nil
	}
	op := route.Method + " " + route.Path
	switch {
	case status == http.StatusNoContent && len(raw) == 0 && route.Operation.Responses.Status(status) != nil:
		// HTTP gives a 204 no body (RFC 9110 15.3.5), whatever content
		// the contract describes for it (defaultSuccessResponse).
	case status == http.StatusMethodNotAllowed || route.Operation.Responses.Status(status) != nil || route.Operation.Responses.Default() != nil:
		err = validateAnswer(route, params, r, status, header, raw)
	default:
		err = checkUndeclared(doc, route, params, r, status, header, raw)
	}
	if err != nil {
		return op, fmt.Errorf("%s answered %d contrary to the reference contract: %s", op, status, err)
	}
	if status/100 == 2 {
		contract.mu.Lock()
		contract.validated[op]++
		contract.mu.Unlock()
	}
	return op, nil
}

// checkUndeclared applies the rule for a status the operation does not declare.
func checkUndeclared(doc *openapi3.T, route *routers.Route, params map[string]string, r *http.Request, status int, header http.Header, raw []byte) error {
	if status < 400 {
		return fmt.Errorf("status %d is not declared by the operation", status)
	}
	if name, ok := sharedErrors[status]; ok {
		ref := doc.Components.Responses[name]
		if ref == nil {
			return fmt.Errorf("the contract has no components/responses/%s", name)
		}
		op := *route.Operation
		op.Responses = openapi3.NewResponses(openapi3.WithStatus(status, ref))
		rt := *route
		rt.Operation = &op
		return validateAnswer(&rt, params, r, status, header, raw)
	}
	var body any
	if err := json.Unmarshal(raw, &body); err != nil {
		return fmt.Errorf("the error body is not JSON: %v", err)
	}
	return doc.Components.Schemas["error"].Value.VisitJSON(body)
}

func validateAnswer(route *routers.Route, params map[string]string, r *http.Request, status int, header http.Header, raw []byte) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: status, Header: header, Body: io.NopCloser(bytes.NewReader(raw)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	err := openapi3filter.ValidateResponse(context.Background(), in)
	if err == nil {
		return nil
	}
	var me openapi3.MultiError
	if errors.As(err, &me) {
		parts := make([]string, len(me))
		for i, e := range me {
			parts[i] = conciseSchemaError(e)
		}
		return errors.New(strings.Join(parts, "; "))
	}
	return errors.New(conciseSchemaError(err))
}

// conciseSchemaError keeps the pointer and reason of a schema error, without
// the schema and value kin-openapi prints after them.
func conciseSchemaError(err error) string {
	s := err.Error()
	if i := strings.Index(s, "\nSchema:"); i >= 0 {
		s = s[:i]
	}
	return strings.Join(strings.Fields(s), " ")
}

// deviation is one place where fleetcam answers otherwise than the reference
// contract on purpose: one of the API's rules says otherwise, or the
// contract is defective.
// The operations it concerns say so in their OpenAPI description, or in that
// of the schema they answer with.
type deviation struct {
	// operations are the operations whose answers it concerns: every
	// operation of the contract with a 2xx answer that shows the amended
	// schema (TestDeviationsNameEveryOperation), since one object is
	// answered alike wherever it is shown.
	operations []string
	// pointer is the JSON pointer, into the contract, of the schema amended.
	pointer string
	reason  string
	change  func(doc *openapi3.T, s *openapi3.Schema)
}

// deviations is the one list of them.
var deviations = []deviation{{
	operations: []string{"GET /devices/{imei}/events", "GET /devices/{imei}/events/{eventId}",
		"POST /organizations/{orgId}/events", "GET /devices/{imei}/event-config",
		"GET /devices/{imei}/notification-recipients", "GET /organizations/{orgId}/default-settings",
		"POST /organizations/{orgId}/event-settings", "PATCH /organizations/{orgId}/event-settings"},
	pointer: "/components/schemas/modifiableEvents",
	reason: "fleetcam's event kinds (store/catalogue.go) name a violent right turn sharpRightTurn in API " +
		"syntax, where the contract's enum says sharpTurnRight (fleetcam accepts sharpTurnRight as an alias)",
	change: func(doc *openapi3.T, s *openapi3.Schema) { s.Enum = append(s.Enum, "sharpRightTurn") },
}, {
	operations: []string{"GET /devices/{imei}/event-config", "GET /organizations/{orgId}/default-settings",
		"POST /organizations/{orgId}/event-settings", "PATCH /organizations/{orgId}/event-settings"},
	pointer: "/components/schemas/eventSettingObject",
	reason: "any event kind can be disabled (a disabled event is neither created nor reported) and has " +
		"its visual and audio alert switches, so an event configuration lists every event kind, the beep " +
		"events and virtualEvent too, which the contract calls unmodifiable and leaves out of modifiableEvents",
	change: func(doc *openapi3.T, s *openapi3.Schema) {
		all := openapi3.NewStringSchema()
		for _, name := range []string{"modifiableEvents", "unmodifiableEvents"} {
			all.Enum = append(all.Enum, doc.Components.Schemas[name].Value.Enum...)
		}
		s.Properties["eventType"] = all.NewRef()
	},
}, {
	operations: []string{"GET /devices/{imei}/device-config", "PUT /devices/{imei}/device-config",
		"PUT /devices/device-config", "GET /organizations/{orgId}/default-settings"},
	pointer: "/components/schemas/deviceConfigResponse",
	reason: `contract defect, and fleetcam's device configuration has driverIdentification ` +
		`(with driverPrompt, audioAlert, driverPromptDurationSeconds) among the parameters PUT ` +
		`device-config sets: the contract's response configuration (additionalProperties: false) ` +
		`lacks six parameters its own request configuration (deviceConfig) sets — driverIdentification, ` +
		`virtualIgnition, screenTimeout, passengerLimit, wakeupMsg, ledEnabled — so the configuration ` +
		`read back is validated with them, as the request schema describes them`,
	change: func(doc *openapi3.T, s *openapi3.Schema) {
		for name, p := range doc.Components.Schemas["deviceConfig"].Value.Properties {
			if s.Properties[name] == nil {
				s.Properties[name] = p
			}
		}
	},
}, {
	operations: []string{"GET /devices/{imei}/events", "GET /devices/{imei}/events/{eventId}",
		"POST /organizations/{orgId}/events"},
	pointer: "/components/schemas/eventCommentObject/properties/createdBy/properties/id",
	reason: "contract defect: oneOf of userId and partnerId, both integers, so every id matches " +
		"both branches and no answer can conform; validated as anyOf",
	change: func(doc *openapi3.T, s *openapi3.Schema) {
		s.AnyOf, s.OneOf = s.OneOf, nil
	},
}, {
	operations: []string{"GET /me"},
	pointer:    "/components/responses/getMe/content/application~1json/schema/properties/data/properties/me",
	reason: "the admin token a partner gets for an organization acts on its calls as an administrator " +
		"and belongs to no user, so it has neither the user object's id nor its email; " +
		"GET /me answers id 0 and role administrator for it",
	change: func(doc *openapi3.T, s *openapi3.Schema) {
		admin := openapi3.NewObjectSchema().
			WithProperty("id", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNumber}, Enum: []any{0.0}}).
			WithProperty("role", openapi3.NewStringSchema().WithEnum("administrator"))
		admin.Required = []string{"id", "role"}
		s.OneOf = append(s.OneOf, admin.NewRef())
	},
}, {
	operations: []string{"GET /devices/{imei}/data-usage", "POST /devices/bulk-data-usage",
		"GET /organizations/{orgId}/devices-data-usage"},
	pointer: "/components/schemas/deviceDataUsage",
	reason: "contract defect: receivedAt, the time of the device's last usage report, is required " +
		"(and not nullable), which a device that never reported cannot give; fleetcam leaves it out until then",
	change: func(doc *openapi3.T, s *openapi3.Schema) {
		s.Required = slices.DeleteFunc(s.Required, func(m string) bool { return m == "receivedAt" })
	},
}, {
	operations: []string{"POST /oauth/clients/{entityType}/{entityId}", "GET /oauth/clients",
		"GET /oauth/clients/{clientId}", "PATCH /oauth/clients/{clientId}", "PUT /oauth/clients/{clientId}/secret"},
	pointer: "/components/schemas/oAuthEntityType",
	reason: "fleetcam's tenants are partners and their organizations, not subpartners or partner " +
		"contacts: an OAuth client belongs to a partner or to one organization (with an organization " +
		"administrator's rights), which the contract's entityType lacks",
	change: func(doc *openapi3.T, s *openapi3.Schema) { s.Enum = append(s.Enum, "organization") },
}, {
	operations: []string{"GET /device-data-usage"},
	pointer:    "/components/schemas/deviceDataUsageResponseObject",
	reason: "contract defect: billingDate, the start of the device's billing period as the device reports it, " +
		"is required, which a device that never reported cannot give; fleetcam leaves it out until then",
	change: func(doc *openapi3.T, s *openapi3.Schema) {
		s.Required = slices.DeleteFunc(s.Required, func(m string) bool { return m == "billingDate" })
	},
}, {
	operations: []string{"GET /device-health"},
	pointer:    "/components/schemas/deviceHealth",
	reason: "contract defect: lastConnectedAt, lastRecordingHealth and lastRecordingUpdatedAt are required " +
		"(and not nullable), which a device that never connected or never ran a recording test cannot give, " +
		"while the contract's own lastRecordingHealth=-1 filter selects such devices; fleetcam leaves them out until then",
	change: func(doc *openapi3.T, s *openapi3.Schema) {
		s.Required = slices.DeleteFunc(s.Required, func(m string) bool {
			return m == "lastConnectedAt" || m == "lastRecordingHealth" || m == "lastRecordingUpdatedAt"
		})
	},
}}

// amend applies the deviation to the loaded contract.
func (d deviation) amend(doc *openapi3.T) error {
	parts := strings.Split(strings.TrimPrefix(d.pointer, "/"), "/")
	if len(parts) < 3 || parts[0] != "components" {
		return errors.New("not a pointer into components")
	}
	var ref *openapi3.SchemaRef
	i := 3
	switch parts[1] {
	case "schemas":
		ref = doc.Components.Schemas[parts[2]]
	case "responses": // …/content/application~1json/schema
		if r := doc.Components.Responses[parts[2]]; r != nil && len(parts) >= 6 && parts[4] == "application~1json" {
			if mt := r.Value.Content.Get("application/json"); mt != nil {
				ref, i = mt.Schema, 6
			}
		}
	}
	for ; ref != nil && i < len(parts); i++ {
		switch parts[i] {
		case "properties":
			i++
			if i < len(parts) {
				ref = ref.Value.Properties[parts[i]]
			}
		case "items":
			ref = ref.Value.Items
		default:
			ref = nil
		}
	}
	if ref == nil || ref.Value == nil {
		return errors.New("no such schema")
	}
	d.change(doc, ref.Value)
	return nil
}
