# fleetcam — the commands a newcomer needs, on a machine with only Go.
GO       ?= go
BIN      ?= bin
CONFIG   ?=
SIMFLAGS ?= -devices 10 -duration 60s
# Interface make run listens on; empty for every interface (see run).
LISTEN   ?= 127.0.0.1

BENCHFLAGS ?=
FUZZTIME   ?= 60s

# Every go command of this Makefile, and those its tests and scripts run,
# builds gin without its MessagePack binding and rendering (gin's nomsgpack
# tag): fleetcam's API speaks JSON alone and binds no body through gin, and
# the codec they need (github.com/ugorji/go/codec) is the package of the
# module graph that takes longest to compile, about 45 CPU-seconds with the
# race detector and 35 without on two cores, on every new machine.
export GOFLAGS := $(strip $(filter-out -tags=nomsgpack,$(GOFLAGS)) -tags=nomsgpack)

.PHONY: build run test lint fuzz bench bench-go bench-postgres bench-cluster sim clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Starts fleetcam on its embedded defaults (data in ./data), reachable from
# this machine only: HTTP 127.0.0.1:8080, MQTT 127.0.0.1:1883. `make run
# LISTEN=` listens on every interface (fleetcam's own default, for dashcams
# and callers on other machines); FLEETCAM_HTTP_ADDR and FLEETCAM_MQTT_ADDR,
# or the addresses of CONFIG, take precedence. The programs are built first
# and run directly, so Ctrl-C ends them with their own clean exit status
# (go run reports an interrupt as a failure).
run:
	$(GO) build -o $(BIN)/ ./cmd/fleetcam
	$(if $(CONFIG),,FLEETCAM_HTTP_ADDR=$${FLEETCAM_HTTP_ADDR:-$(LISTEN):8080} FLEETCAM_MQTT_ADDR=$${FLEETCAM_MQTT_ADDR:-$(LISTEN):1883}) $(BIN)/fleetcam $(if $(CONFIG),-config $(CONFIG))

# Every test, with the race detector (the store suite on both storage
# engines, the media store suite on a directory and on an S3 server), the
# API tests again on PostgreSQL, the OpenAPI document's lint
# and generated clients, and each fuzz target for 3 seconds with one worker.
#
# The alert rules' tests come first. Then three runs go side by side, for
# most tests wait on a server or a child process rather than use a core:
# the race-detected run (test-race); the API tests on PostgreSQL without
# the race detector (test-api: the API's code runs under it in the first
# run, on bbolt, and the PostgreSQL engine's in its own tests, the store
# suite on PostgreSQL and the end-to-end tests on it); and the OpenAPI
# checks followed by the fuzz targets (test-checks). The two beside the
# first print their output in one piece when they end. go vet runs within
# the race-detected run, with every analyzer (-vet=all), on every package
# as it is built for it: a separate go vet ./... would build every package
# once more without the race detector, minutes on a new machine, and the
# API tests on PostgreSQL are the same sources, vetted there already.
#
# Before them, the Debian packages the tests need are installed one after
# another (apt takes one at a time) while the S3 server of the tests is
# built beside them, and the Go modules of the tests are downloaded beside
# both, so that the race-detected run starts compiling at once.
test:
	$(MAKE) --no-print-directory -j3 test-deps-packages test-deps-versitygw test-deps-modules
	$(MAKE) --no-print-directory check-rules
	$(MAKE) --no-print-directory -j3 test-race test-api test-checks

.PHONY: test-deps-packages
test-deps-packages:
	$(MAKE) --no-print-directory test-deps-promtool
	$(MAKE) --no-print-directory test-deps-chromium
	$(MAKE) --no-print-directory test-deps-postgresql
	$(MAKE) --no-print-directory test-deps-node

# The suite's length on two cores is the CPU it asks for, and two settings
# of Go's make it ask for less (docs/performance.md, "The test suite"):
# - go, the compiler, the linker and the test binaries run with the garbage
#   collector at GOGC=$(TESTGOGC) (TESTGOGC): a heap grows to five times what
#   is live before it is collected, where Go's default lets it double.
#   That saves about an eighth of a build's CPU, and more of a
#   race-detected program's. The memory it costs is what a test machine
#   has to spare: the largest test binary stays under 1 GiB resident.
# - every package is compiled without DWARF debugging information
#   (TESTGOFLAGS, -gcflags=all=-dwarf=false): go test links its test
#   binaries without it anyway (-s -w), stack traces and the race
#   detector's reports come from the runtime's own function tables, and
#   each compile takes about an eighth less CPU. The fleetcam
#   that tests start as a child process (go build, with the tests' GOFLAGS)
#   and the S3 server are built the same way, and share those packages.
# The programs of make run and make bench keep Go's defaults.
TESTGOGC    ?= 400
TESTGOFLAGS ?= -gcflags=all=-dwarf=false
test test-race test-api test-checks test-deps-versitygw: export GOGC = $(TESTGOGC)
test test-race test-api test-checks test-deps-versitygw: export GOFLAGS := $(strip $(filter-out $(TESTGOFLAGS),$(GOFLAGS)) $(TESTGOFLAGS))

# TESTP test binaries of the race-detected run go at once, each with up to
# TESTPARALLEL of its parallel tests, and the API tests on PostgreSQL run
# TESTAPIPARALLEL at a time: most tests wait on a server, a child process
# or a database copy far more than they compute, and the race detector's
# work grows with the goroutines of its process, so its run keeps to fewer
# at once. cmd/fleetcam, whose end-to-end tests mostly wait on child
# processes, process clusters and outages, runs TESTE2EPARALLEL of them at
# once (FLEETCAM_E2E_PARALLEL, which its TestMain reads): it is the longest
# package, and with two at a time its tests were the last to run, on one
# core, for minutes. The packages whose tests take longest are named first, so that
# go test starts them first and the short ones fill the end of the run.
# Every wait in the tests is for a condition and ends when it holds;
# TESTTIMEOUT only stops a test binary that hangs (go test's own default,
# 10 minutes, is within reach of the largest packages on a busy two-core
# machine).
TESTTIMEOUT     ?= 30m
TESTP           ?= 3
TESTPARALLEL    ?= 2
TESTE2EPARALLEL ?= 4
TESTAPIPARALLEL ?= 4
TESTPKGS        ?= ./cmd/fleetcam ./store/postgres ./store ./cmd/fleetbench ./cloudapi ./...
.PHONY: test-race test-api test-checks

# The race-detected run compiles the other modules' packages without
# optimizations or inlining (-N -l), except the few its tests spend their
# time in: the bbolt store, the PostgreSQL driver, bcrypt (x/crypto) and
# the MQTT packet codec. fleetcam's own packages and the standard library
# are compiled as always. Those modules then take about a quarter less
# CPU to compile on a new machine, some 20 CPU-seconds (the NATS server,
# which only the tests import, 23 → 17), and the tests' run no more than
# a few: what they run of those packages is a small part of their time
# under the race detector, and every memory access in them is still
# instrumented (docs/performance.md). The binaries
# outside this run (fleetcam as the tests' child process, the API tests
# on PostgreSQL, the fuzz targets) are compiled as always.
TESTRACEGCFLAGS ?= '-gcflags=all=-dwarf=false -N -l' -gcflags=std=-dwarf=false \
	$(foreach p,github.com/fleetcam/fleetcam/... go.etcd.io/bbolt/... github.com/jackc/... golang.org/x/crypto/... github.com/mochi-mqtt/...,-gcflags=$(p)=-dwarf=false)
test-race:
	FLEETCAM_E2E_PARALLEL=$(TESTE2EPARALLEL) $(GO) test -race -vet=all $(TESTRACEGCFLAGS) -count=1 -p $(TESTP) -parallel $(TESTPARALLEL) -timeout $(TESTTIMEOUT) $(TESTPKGS)

# Runs a command into a log and prints the log in one piece when it ends,
# headed by the command.
logged = log=$$(mktemp) && { $(1) >"$$log" 2>&1; rc=$$?; } ; echo '$(1)' && cat "$$log" && rm -f "$$log" && exit $$rc

# The API's packages whose tests open a store (through store/storetest,
# which FLEETCAM_TEST_ENGINE points at PostgreSQL): the others' tests would
# only run again as they ran in the race-detected run.
TESTAPIPKGS ?= $(shell $(GO) list -test -f '{{if not .ForTest}}{{.ImportPath}} {{join .Deps " "}}{{end}}' ./cloudapi/... | \
	awk '$$1 ~ /\.test$$/ && / github\.com\/fleetcam\/fleetcam\/store\/storetest( |$$)/ { sub(/\.test$$/, "", $$1); print $$1 }')

test-api:
	@$(call logged,FLEETCAM_TEST_ENGINE=postgres $(GO) test -vet=off -count=1 -parallel $(TESTAPIPARALLEL) -timeout $(TESTTIMEOUT) $(TESTAPIPKGS))

test-checks:
	@$(call logged,$(MAKE) --no-print-directory test-checks-run)

.PHONY: test-checks-run
test-checks-run: openapi-lint
	GO=$(GO) FUZZPARALLEL=1 .ci/fuzz 3s

# Each fuzz target (MQTT packets, device payloads) for FUZZTIME, in turn.
fuzz:
	GO=$(GO) .ci/fuzz $(FUZZTIME)

# Headless Chromium for the test that plays event videos in a <video>
# element (cmd/fleetcam): the Debian package chromium, installed when
# missing and running as root.
.PHONY: test-deps-chromium
test-deps-chromium:
	@command -v chromium >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }; else echo "make test-deps-chromium: chromium is missing; install the Debian package chromium (apt-get install chromium)" >&2; exit 1; fi; }

# PostgreSQL for the tests of the PostgreSQL store engine (store/pgtest
# starts a throwaway server of its own, on a free loopback port): the Debian
# package postgresql, installed when missing and running as root. Its own
# service is not used.
.PHONY: test-deps-postgresql
test-deps-postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || test -n "$$FLEETCAM_PG_BIN" || { if [ "$$(id -u)" = 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; }; else echo "make test-deps-postgresql: PostgreSQL is missing; install the Debian package postgresql (apt-get install postgresql)" >&2; exit 1; fi; }

# The S3-compatible server of the tests of the media bucket (store/blob/s3test
# starts a throwaway one on a free loopback port): the Versity S3 Gateway's
# gateway and POSIX backend (tools/s3gateway, versitygw from the Go module
# proxy), built by .ci/versitygw once per content of tools/s3gateway into
# $${XDG_CACHE_HOME:-~/.cache}/fleetcam/s3gateway-DIGEST (about a minute on
# two cores), and reused by every later run. Skipped when
# FLEETCAM_VERSITYGW_BIN names a binary (tools/s3gateway's or versitygw's).
.PHONY: test-deps-versitygw
test-deps-versitygw:
	@test -n "$$FLEETCAM_VERSITYGW_BIN" || GO=$(GO) .ci/versitygw >/dev/null

# The modules that fleetcam's packages and their tests import, into Go's
# module cache (nothing to do once they are there).
.PHONY: test-deps-modules
test-deps-modules:
	@$(GO) mod download

# Node.js and npm for the OpenAPI lint and the TypeScript client (make
# openapi-check): the Debian packages nodejs and npm, installed when missing
# and running as root. The pinned @redocly/cli needs Node.js 20.19 or later.
.PHONY: test-deps-node
test-deps-node:
	@{ command -v node && command -v npm; } >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm; }; else echo "make test-deps-node: Node.js or npm is missing; install the Debian packages nodejs and npm (apt-get install nodejs npm)" >&2; exit 1; fi; }
	@node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' || { echo "make test-deps-node: Node.js $$(node --version) is older than 20.19, which @redocly/cli (clients/ts/package.json) needs; install Node.js 20.19 or later" >&2; exit 1; }

# The packages of clients/ts, as package-lock.json pins them: npm ci when
# node_modules is missing or older than the lock file.
clients/ts/node_modules/.package-lock.json: clients/ts/package-lock.json | test-deps-node
	cd clients/ts && npm ci --no-audit --no-fund

# The OpenAPI document and the clients generated from it, kept in clients/:
# the document as GET /v2/openapi.json serves it (openapi.json), the Go
# client (go/fleetcam, oapi-codegen pinned in go.mod) and the TypeScript
# types (ts/src/schema.d.ts, openapi-typescript pinned in
# ts/package-lock.json). Run it after changing cloudapi/openapi/*.yaml and
# commit what it writes.
.PHONY: openapi-client
openapi-client: clients/ts/node_modules/.package-lock.json
	$(GO) run ./cmd/fleetcam openapi > clients/openapi.json
	$(GO) generate ./clients/go/fleetcam
	cd clients/ts && node_modules/.bin/openapi-typescript ../openapi.json -o src/schema.d.ts

# Checks the OpenAPI document and its clients: the committed document and Go
# client are what the API generates now and the Go client compiles
# (openapi-check-go), the document passes Redocly's recommended rules with
# every one an error (redocly.yaml), the TypeScript types are current and
# type-check, and the lint rules of clients/ts/redocly pass their tests
# (openapi-lint). make test runs openapi-lint alone: its race-detected run
# of every package runs the Go client's tests and vets it already.
REDOCLY_ENV = REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
.PHONY: openapi-check openapi-check-go openapi-lint
openapi-check: openapi-check-go openapi-lint

openapi-check-go:
	$(GO) test -count=1 -run 'Test(Document|Client)IsCurrent' ./clients/go/fleetcam/
	$(GO) vet ./clients/go/...

openapi-lint: clients/ts/node_modules/.package-lock.json
	$(REDOCLY_ENV) clients/ts/node_modules/.bin/redocly lint clients/openapi.json
	@# openapi-typescript applies the redocly.yaml of its working directory,
	@# with none of the lint's exceptions, so it runs in clients/ts.
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cd clients/ts && \
	  node_modules/.bin/openapi-typescript ../openapi.json -o "$$tmp/schema.d.ts" >/dev/null && \
	  if ! cmp -s "$$tmp/schema.d.ts" src/schema.d.ts; then echo "make openapi-lint: clients/ts/src/schema.d.ts is not what openapi-typescript generates from clients/openapi.json; run make openapi-client and commit the result" >&2; exit 1; fi
	cd clients/ts && node_modules/.bin/tsc --noEmit
	cd clients/ts && $(REDOCLY_ENV) node --test redocly/

# The Prometheus rules of configs/monitoring: promtool checks them and runs
# the unit tests of the alerts. promtool comes with the Debian package
# prometheus, installed when missing and running as root (the package also
# installs a prometheus service, which nothing here uses).
PROMTOOL ?= promtool
.PHONY: check-rules test-deps-promtool
check-rules: test-deps-promtool
	$(PROMTOOL) check rules configs/monitoring/alerts.yml
	$(PROMTOOL) test rules configs/monitoring/alerts_test.yml

test-deps-promtool:
	@command -v $(PROMTOOL) >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus; }; else echo "make test-deps-promtool: promtool is missing; install the Debian package prometheus (apt-get install prometheus)" >&2; exit 1; fi; }

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd tools/s3gateway && GOWORK=off $(GO) vet .

# Go benchmarks of the hot paths, then the system benchmark (cmd/fleetbench:
# connection hold, ingest, webhooks, event API, mosquitto baseline, kill -9
# durability, retention purge; about six minutes on two cores, loopback only). Installs
# mosquitto for the baseline when missing and running as root.
bench: build bench-go
	@command -v mosquitto >/dev/null 2>&1 || test -x /usr/sbin/mosquitto || { if [ "$$(id -u)" = 0 ]; then apt-get install -y mosquitto || { apt-get update && apt-get install -y mosquitto; }; else echo "make bench: mosquitto is missing and installing it needs root; the baseline part will be skipped"; fi; }
	$(BIN)/fleetbench -fleetcam $(BIN)/fleetcam $(BENCHFLAGS)

# The system benchmark on bbolt and on PostgreSQL in the same run, side by
# side with PostgreSQL / bbolt: the parts hold, ingest, webhook, api,
# durability and purge run on each engine in turn (not the mosquitto
# baseline, which has no store, nor media, which fleetbench runs on bbolt
# only: the records' engine does not matter to media bytes), PostgreSQL being a server fleetbench starts in its
# work directory (fsync on, as in production) and removes afterwards; a
# database of its own for every fleetcam start. Seeding the API part's
# million events into PostgreSQL takes most of the run (about half an hour
# on two cores). Installs PostgreSQL when missing and running as root.
bench-postgres: build
	@$(MAKE) --no-print-directory test-deps-postgresql
	$(BIN)/fleetbench -fleetcam $(BIN)/fleetcam -postgres auto -part hold,ingest,webhook,api,durability,purge $(BENCHFLAGS)

# The cluster benchmark: three fleetcam nodes on a PostgreSQL server
# fleetbench starts in its work directory and a NATS server in its own
# process, 1,000 devices spread over them, a webhook receiver; connect
# rate, durable closed loop, commands across nodes, publish → webhook, then
# kill -9 of one node: time until its devices are reconnected and serving,
# acknowledged messages and webhooks lost (docs/performance.md, Cluster).
# About two minutes on two cores. Installs PostgreSQL when missing and
# running as root.
bench-cluster: build
	@$(MAKE) --no-print-directory test-deps-postgresql
	$(BIN)/fleetbench -fleetcam $(BIN)/fleetcam -cluster 3 $(BENCHFLAGS)

# Go benchmarks of the hot paths only (payload decode, event ingest, group
# commit, event pages, webhook signing), in seconds.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 200ms ./broker/ ./broker/cluster/ ./store/ ./cloudapi/webhooks/

# Runs simulated dashcams against a local fleetcam (make run in another terminal).
sim:
	$(GO) build -o $(BIN)/ ./cmd/devicesim
	$(BIN)/devicesim $(SIMFLAGS)

clean:
	rm -rf $(BIN)
