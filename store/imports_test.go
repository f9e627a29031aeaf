package store_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStoreKnowsNoWireOrAPITypes keeps the store an engine of records: no
// file of the package imports the device wire types, the broker or the
// API. Callers map their payloads to the store's inputs.
func TestStoreKnowsNoWireOrAPITypes(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"github.com/fleetcam/fleetcam/broker", "github.com/fleetcam/fleetcam/cloudapi"} {
				if path == banned || strings.HasPrefix(path, banned+"/") {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}
