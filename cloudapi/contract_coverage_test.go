package cloudapi

import (
	"flag"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
)

// routed gathers the operations the API tests' servers routed.
var routed struct {
	mu  sync.Mutex
	ops map[string]bool // "GET /v2/devices/{imei}"
}

// recordRoutes notes the routes of a server the tests started.
func recordRoutes(routes []gin.RouteInfo) {
	routed.mu.Lock()
	defer routed.mu.Unlock()
	if routed.ops == nil {
		routed.ops = map[string]bool{}
	}
	for _, rt := range routes {
		routed.ops[rt.Method+" "+ginToOpenAPI(rt.Path)] = true
	}
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// contractCoverage lists the routed operations of the reference contract that
// no test of this run received a conforming 2xx answer from. It is meaningful
// only for a run of every test, so TestMain calls it when no -run, -skip or
// -short narrows the run.
func contractCoverage() ([]string, error) {
	doc, _, err := loadContract()
	if err != nil {
		return nil, err
	}
	// Path parameters are named differently on both sides ({orgId}, {organizationId}).
	inContract := map[string]string{} // normalised → contract operation
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inContract[method+" "+pathParam.ReplaceAllString(path, "{}")] = method + " " + path
		}
	}
	routed.mu.Lock()
	defer routed.mu.Unlock()
	contract.mu.Lock()
	defer contract.mu.Unlock()
	var missing []string
	for op := range routed.ops {
		method, path, _ := strings.Cut(op, " ")
		cop, ok := inContract[method+" "+pathParam.ReplaceAllString(strings.TrimPrefix(path, "/v2"), "{}")]
		if ok && contract.validated[cop] == 0 {
			missing = append(missing, cop)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// wholeRun tells whether the test binary runs every test.
func wholeRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	if f := flag.Lookup("test.short"); f != nil && f.Value.String() == "true" {
		return false
	}
	return true
}

// checkContractCoverage is TestMain's check after a whole run: every routed
// operation of the contract had at least one validated 2xx answer.
func checkContractCoverage() error {
	if !wholeRun() {
		return nil
	}
	missing, err := contractCoverage()
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("reference contract coverage: no test received a conforming 2xx answer from %d routed operations:\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
	return nil
}
