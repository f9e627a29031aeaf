# fleetcam — the commands a newcomer needs, on a machine with only Go.
GO       ?= go
BIN      ?= bin
CONFIG   ?=
SIMFLAGS ?= -devices 10 -duration 60s

.PHONY: build run test lint bench sim clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Starts fleetcam on its embedded defaults (data in ./data, HTTP :8080, MQTT :1883).
run:
	$(GO) run ./cmd/fleetcam $(if $(CONFIG),-config $(CONFIG))

# Every test, with the race detector.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Runs simulated dashcams against a local fleetcam (make run in another terminal).
sim:
	$(GO) run ./cmd/devicesim $(SIMFLAGS)

clean:
	rm -rf $(BIN)
