package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fleetcam/fleetcam/cloudapi"
)

// printOpenAPI writes the OpenAPI document the server serves at
// /v2/openapi.json to stdout (make openapi-client keeps it as
// clients/openapi.json); it needs no configuration, store or server.
func printOpenAPI(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("openapi", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("openapi: unexpected argument %q; the command takes none", fs.Arg(0))
	}
	doc, err := cloudapi.OpenAPIDocument()
	if err != nil {
		return err
	}
	_, err = stdout.Write(doc)
	return err
}
