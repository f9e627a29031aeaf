// Command s3gateway is the S3-compatible server of fleetcam's tests: the
// Versity S3 Gateway (github.com/versity/versitygw, Apache-2.0) serving a
// POSIX directory, each object's metadata kept in a sidecar directory,
// with one root account and no other identity. It is versitygw's own
// gateway and backend, started through its embedding package without the
// command line's other backends (Azure, S3 proxy, ScoutFS) and their
// libraries, which the tests do not use and would take a new machine a
// minute of two cores to build. .ci/versitygw builds it (make
// test-deps-versitygw) and store/blob/s3test starts it.
//
// Its arguments are versitygw's own for the same server, so that a
// versitygw binary can stand in for it (FLEETCAM_VERSITYGW_BIN):
//
//	s3gateway --port 127.0.0.1:7070 --access KEY --secret SECRET [--region us-east-1] [--quiet] \
//	    posix --sidecar METADIR DATADIR
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
)

// The limits and options versitygw's command line sets by default.
const (
	maxConnections      = 250_000
	maxRequests         = 100_000
	multipartMaxParts   = 10_000
	posixConcurrency    = 5000
	posixIOBufferSize   = 1 << 20
	copyObjectThreshold = 5 << 30
	newDirPerm          = 0o755
	newFilePerm         = 0o644
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "s3gateway:", err)
		os.Exit(2)
	}
}

// run parses args and serves until ctx ends or the gateway fails.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	gw := flag.NewFlagSet("s3gateway", flag.ContinueOnError)
	gw.SetOutput(stderr)
	port := gw.String("port", "", "address to serve S3 on, host:port")
	access := gw.String("access", "", "the root account's access key")
	secret := gw.String("secret", "", "the root account's secret key")
	region := gw.String("region", "us-east-1", "the region the gateway reports")
	quiet := gw.Bool("quiet", false, "no line per request")
	if err := gw.Parse(args); err != nil {
		return err
	}
	if *port == "" || *access == "" || *secret == "" {
		return errors.New("--port, --access and --secret are required")
	}
	if gw.Arg(0) != "posix" {
		return fmt.Errorf("the backend is %q; posix is the only one", gw.Arg(0))
	}
	px := flag.NewFlagSet("posix", flag.ContinueOnError)
	px.SetOutput(stderr)
	sidecar := px.String("sidecar", "", "directory of the objects' metadata, outside the data directory")
	if err := px.Parse(gw.Args()[1:]); err != nil {
		return err
	}
	if *sidecar == "" || px.NArg() != 1 {
		return errors.New("posix needs --sidecar METADIR and one DATADIR")
	}

	ms, err := meta.NewSideCar(*sidecar)
	if err != nil {
		return fmt.Errorf("sidecar metadata: %w", err)
	}
	opts := posix.PosixOpts{
		SideCarDir:          *sidecar,
		Concurrency:         posixConcurrency,
		IOBufferSize:        posixIOBufferSize,
		CopyObjectThreshold: copyObjectThreshold,
	}
	opts.SetNewDirPerm(newDirPerm)
	opts.SetNewFilePerm(newFilePerm)
	be, err := posix.New(px.Arg(0), ms, opts)
	if err != nil {
		return fmt.Errorf("posix backend: %w", err)
	}
	return embedgw.RunVersityGW(ctx, be, &embedgw.Config{
		RootUserAccess:    *access,
		RootUserSecret:    *secret,
		Region:            *region,
		Ports:             []string{*port},
		MaxConnections:    maxConnections,
		MaxRequests:       maxRequests,
		MultipartMaxParts: multipartMaxParts,
		Quiet:             *quiet,
	})
}
