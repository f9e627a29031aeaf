package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/devicesim"
)

func TestHealthFlag(t *testing.T) {
	f, err := parseFlags([]string{"-state-dir", "", "-health", "sdCardFailing, powerDisconnected"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.options(slog.New(slog.DiscardHandler), devicesim.NewStats())
	if err != nil {
		t.Fatal(err)
	}
	if want := (devicesim.Health{SDCardFailing: true, PowerDisconnected: true}); o.Device.Health != want {
		t.Fatalf("health %+v, want %+v", o.Device.Health, want)
	}

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-state-dir", "", "-health", "sdCardFailing,flatTyre"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), `-health: devicesim: health: fault "flatTyre" must be one of`) {
		t.Fatalf("stderr %q", stderr.String())
	}
}
