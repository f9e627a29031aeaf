package cloudapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"
)

var contract struct {
	once   sync.Once
	router routers.Router
	err    error

	mu       sync.Mutex
	problems map[string]map[string]int // operation → problem → count
	checked  map[string]int
}

func contractRouter() (routers.Router, error) {
	contract.once.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile("testdata/reference/surfsight-openapi-gateway.json")
		if err != nil {
			contract.err = err
			return
		}
		doc.Servers = openapi3.Servers{{URL: "/v2"}}
		contract.router, contract.err = legacyrouter.NewRouter(doc, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation())
		contract.problems = map[string]map[string]int{}
		contract.checked = map[string]int{}
	})
	return contract.router, contract.err
}

func checkContract(req *http.Request, status int, header http.Header, raw []byte) {
	router, err := contractRouter()
	if err != nil {
		panic(err)
	}
	r := req.Clone(context.Background())
	r.Host = ""
	r.URL.Host, r.URL.Scheme = "", ""
	route, params, err := router.FindRoute(r)
	if err != nil {
		return
	}
	op := route.Method + " " + route.Path
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: status, Header: header, Body: io.NopCloser(bytes.NewReader(raw)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	err = openapi3filter.ValidateResponse(context.Background(), in)
	contract.mu.Lock()
	defer contract.mu.Unlock()
	contract.checked[op]++
	if err == nil {
		return
	}
	if contract.problems[op] == nil {
		contract.problems[op] = map[string]int{}
	}
	msg := fmt.Sprintf("%d: %s", status, err)
	if len(msg) > 400 {
		msg = msg[:400]
	}
	contract.problems[op][strings.ReplaceAll(msg, "\n", " | ")]++
}

func reportContract() {
	contract.mu.Lock()
	defer contract.mu.Unlock()
	f, _ := os.Create("/tmp/contract-report.txt")
	defer f.Close()
	ops := make([]string, 0, len(contract.checked))
	for op := range contract.checked {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	bad := 0
	for _, op := range ops {
		if len(contract.problems[op]) == 0 {
			fmt.Fprintf(f, "OK   %s (%d)\n", op, contract.checked[op])
			continue
		}
		bad++
		fmt.Fprintf(f, "BAD  %s (%d)\n", op, contract.checked[op])
		for p, n := range contract.problems[op] {
			fmt.Fprintf(f, "       %dx %s\n", n, p)
		}
	}
	fmt.Fprintf(f, "%d operations checked, %d with problems\n", len(ops), bad)
}
