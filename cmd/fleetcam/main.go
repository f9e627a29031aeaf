// Command fleetcam runs the fleet video telematics cloud: the embedded MQTT
// broker for dashcams, the /v2 HTTP API and the webhook delivery, in one
// process over one data directory. Operator subcommands manage partners and
// users while the server is stopped.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	os.Exit(runMain(os.Args[1:]))
}

// runMain runs fleetcam as the process does: SIGINT (Ctrl-C) and SIGTERM
// stop the server gracefully, and a clean stop exits 0.
func runMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, os.Getenv, os.Stdout, os.Stderr)
}

const usage = `usage: fleetcam [COMMAND] [FLAGS]

Commands:
  serve             start the server; the default when no command is given
  migrate           bring the store's schema up to date (PostgreSQL: store.postgresURL) and exit
  store copy        copy every record of a store into an empty one: bbolt file to PostgreSQL or back;
                    with -media, the media files: a directory into a bucket or back
  partner add       create a partner and its first user
  user add          add a user to a partner or to an organization
  device refurbish  mark a device refurbished, after which its billing cannot change
  cluster status    list the live nodes of a cluster and the devices each holds (over NATS)
  openapi           print the OpenAPI document of the /v2 API (as GET /v2/openapi.json serves it)
  help              show this text

Server flags (fleetcam [serve] ...):
  -config FILE      YAML configuration (configs/fleetcam.yaml documents every setting
                    and its FLEETCAM_* variable); without it the built-in defaults apply

  fleetcam migrate [-config FILE] takes the same configuration.

The operator commands below work on a data directory while the server is stopped (or, with
FLEETCAM_POSTGRES_URL set, on that PostgreSQL database, server running or not); they refuse a
directory without a store unless --create is given. -config FILE reads the store's location
and the password hashing cost (auth.bcryptCost) from the server's configuration file:
  fleetcam partner add -data DIR --name NAME --email EMAIL [--password PASSWORD] [--create]
  fleetcam user add -data DIR --email EMAIL (--partner ID | --organization ID)
                    [--access-level viewer|editor|editorWithoutMediaAccess] [--password PASSWORD]
  fleetcam device refurbish -data DIR --imei IMEI [--undo]
Without --password a password is generated and printed. Passwords need 8 to 72 bytes with
an upper-case letter, a lower-case letter and a digit.

  fleetcam store copy -from FILE|URL -to FILE|URL
copies every record of one store, with its ids, into another that holds none: FILE is a bbolt
store file (DIR/fleetcam.db), URL a postgres:// or postgresql:// URL (an empty database gets
the schema first). Stop the fleetcam using the source, and migrate it, first. It prints each
kind of record as it is copied and the counts of both sides, and exits 1, leaving nothing in
the destination, if a count differs. Records only: media bytes stay in the media directory
(media.dir, by default dataDir/media) or the bucket of media.s3; store copy -media copies them.

  fleetcam store copy -media -from DIR|s3://BUCKET[/PREFIX] -to DIR|s3://BUCKET[/PREFIX] [-config FILE]
copies the media files (event videos, snapshots, ADAS images) of a directory (media.dir, by
default dataDir/media) into a bucket, or back: the store's endpoint, region and keys are the
media.s3 settings of FILE or FLEETCAM_MEDIA_S3_*. A file the destination holds with the same size is skipped, so
a copy that stopped goes on when run again; a running fleetcam may keep serving meanwhile.
It prints the files and bytes of both sides and exits 1 if the destination lacks any.

  fleetcam cluster status [-config FILE]
asks every live node of the cluster on cluster.natsURL (FLEETCAM_NATS_URL or FILE's; nothing
else of a node's configuration is needed) and prints one line per node: its id, the devices
connected to it and when it started; as GET /v2/cluster answers.

Examples:
  fleetcam                                  # data in ./data, HTTP :8080, MQTT :1883
  fleetcam -config configs/fleetcam.yaml
  FLEETCAM_HTTP_ADDR=127.0.0.1:8080 fleetcam
  fleetcam partner add -data ./data --name "Acme Telematics" --email ops@acme.example
  fleetcam user add -data ./data --email viewer@acme.example --organization 1 --access-level viewer
  fleetcam device refurbish -data ./data --imei 357660100000017
  fleetcam openapi > openapi.json            # the API's OpenAPI document, for a client generator
  fleetcam store copy -from ./data/fleetcam.db -to postgres://fleetcam@db.example/fleetcam
  fleetcam store copy -media -config /etc/fleetcam.yaml -from ./data/media -to s3://fleet-media
  FLEETCAM_NATS_URL=nats://nats.example:4222 fleetcam cluster status -config /etc/fleetcam.yaml
`

// run is fleetcam with its environment passed in; it returns the exit code:
// 0, 1 when the command failed, 2 for an unknown command.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || isHelp(args[0])) {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch {
	case cmd == "serve":
		err = serve(ctx, args, getenv, stdout, stderr)
	case cmd == "migrate":
		err = migrate(ctx, args, getenv, stdout)
	case cmd == "partner", cmd == "user":
		err = admin(cmd, args, getenv, stdout)
	case cmd == "device":
		err = deviceAdmin(args, getenv, stdout)
	case cmd == "openapi":
		err = printOpenAPI(args, stdout)
	case cmd == "store":
		err = storeCommand(ctx, args, getenv, stdout)
	case cmd == "cluster":
		err = clusterCommand(ctx, args, getenv, stdout)
	case isHelp(cmd):
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "fleetcam: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "fleetcam:", err)
		return 1
	}
	return 0
}

// isHelp reports whether arg asks for the usage.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}
