// Command fleetcam runs the fleet video telematics cloud: the embedded MQTT
// broker for dashcams, the /v2 HTTP API and the webhook delivery, in one
// process over one data directory. Operator subcommands manage partners and
// users while the server is stopped.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

const usage = `usage:
  fleetcam [serve] [-config FILE]          start the server (defaults need no file)
  fleetcam partner add -data DIR --name NAME --email EMAIL [--password PASSWORD]
  fleetcam user add -data DIR --email EMAIL (--partner ID | --organization ID)
                    [--access-level viewer|editor|editorWithoutMediaAccess] [--password PASSWORD]
  fleetcam device refurbish -data DIR --imei IMEI [--undo]
`

// run is fleetcam with its environment passed in; it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "partner" || args[0] == "user" || args[0] == "device" || args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, args, getenv, stdout, stderr)
	case "partner", "user":
		err = admin(cmd, args, getenv, stdout)
	case "device":
		err = deviceAdmin(args, getenv, stdout)
	default:
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "fleetcam:", err)
		return 1
	}
	return 0
}
