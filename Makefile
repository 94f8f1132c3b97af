# raftlock: build, run a local three-node cluster, test.
SHELL    := /bin/bash
GO       ?= go
BIN      := bin/raftlock
PKGS     := ./...
# FUZZTIME counts executions, not seconds: Go 1.26's fuzz coordinator can fail a target with
# "context deadline exceeded" when a duration ends while a worker is mid-call on a loaded
# machine (golang/go 75804, fixed in Go 1.27); a count has no deadline to race. 20,000 is
# about 3-5 s of each target on two cores. FUZZTIME=10m still works for a long run.
FUZZTIME ?= 20000x

.PHONY: all build run test loaded-test test-short test-clients test-deps fuzz verify mutants bench budget demo clean fmt vet screenshot

all: build

build:
	$(GO) build -o $(BIN) ./cmd/raftlock

## run: build, start three nodes in the foreground (Ctrl-C stops them all)
run: build
	RAFTLOCK_BIN=$(BIN) scripts/cluster.sh run

## test: vet, unit and in-process multi-node tests with the race detector, short fuzz runs
test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 15m $$($(GO) list $(PKGS) | grep -v /test/netns$$)
	@# The attack suite across network namespaces, verbose so its counts are in the output.
	set -o pipefail; $(GO) test -race -count=1 -timeout 5m -v ./test/netns/ 2>&1 | \
	  grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|attack cases|refused|lease IDs|skip|SKIP' 
	$(GO) test -run='^$$' -bench=. -benchtime=1x ./fsm ./api ./client
	cd bench/etcd && $(GO) vet -mod=mod ./...
	cd bench/peers && $(GO) vet -mod=mod ./...
	@# raftlock's change to hashicorp/raft (third_party/raft/RAFTLOCK.md): its own tests.
	cd third_party/raft && $(GO) vet . && $(GO) test -race -count=1 -run 'TestPendingLogs|TestCandidacyCheck' .
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory test-clients CONFORMANCE_GO=0 # the Go runner ran above, in ./...
	scripts/mutants.sh

## loaded-test: make test beside two busy CPU hogs (scripts/loaded-test.sh; HOGS=N for more), as
## CI on a busy machine: a test that races the scheduler fails here
loaded-test:
	scripts/loaded-test.sh make test

## test-deps: install, with the system's package manager (apt-get, as root), what the client
## suites need and a fresh machine lacks; quiet when everything is there:
##   Python suite:     python3 >= 3.11 with venv, pip, setuptools, wheel    (scripts/ci-python.sh)
##   TypeScript suite: node >= 20 and npm; on Debian 12, whose node is 18, NodeSource's
##                     apt repository for node 20; g++ and make for
##                     better-sqlite3's native module                       (scripts/ci-node.sh)
##   Java suite:       JDK 17, Maven, Debian's Maven repository             (scripts/ci-java.sh)
## (the npm registry then gives the TypeScript suite its pinned compiler, pg and better-sqlite3).
test-deps:
	@scripts/ci-python.sh
	@scripts/ci-node.sh
	@scripts/ci-java.sh

## test-clients: the conformance runners (clients/conformance) and the clients' own tests,
## against real `raftlock serve` processes (about 5 min on 2 cores; test-deps first installs
## what they need). CONFORMANCE_GO=0 leaves out the Go runner (a package of the module:
## `go test ./...` runs it too).
CONFORMANCE_GO ?= 1
test-clients: build test-deps
	if [ "$(CONFORMANCE_GO)" != 0 ]; then $(GO) test -count=1 ./clients/conformance/gorunner/; fi
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "test-clients: python3 >= 3.11 is required (apt-get install python3)" >&2; exit 1; }
	cd clients/python && python3 -m unittest discover -s tests
	python3 clients/python/tests/conformance.py
	RAFTLOCK_BIN=$(CURDIR)/$(BIN) clients/python/tests/install_check.sh
	$(MAKE) --no-print-directory test-ts
	$(MAKE) --no-print-directory test-java

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeCommand$$' -fuzztime=$(FUZZTIME) ./fsm
	$(GO) test -run='^$$' -fuzz='^FuzzRestore$$' -fuzztime=$(FUZZTIME) ./fsm
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeAcquire$$' -fuzztime=$(FUZZTIME) ./transport
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeRelease$$' -fuzztime=$(FUZZTIME) ./transport
	$(GO) test -run='^$$' -fuzz='^FuzzParseToken$$' -fuzztime=$(FUZZTIME) ./fencing

## verify: the long fault-injection campaign (>= 100,000 lock competitions, about 10-20 min),
## the bank campaign (>= 100,000 competitions of the fenced-ledger workload alone, SIGSTOPped
## worker processes, SQLite then PostgreSQL when RAFTLOCK_TEST_POSTGRES_DSN is set; about
## 8-15 min each), the seed's own terms (>= 100,000 competitions with whole worker processes of
## 12 workers frozen 10 s, longer than the 2 s TTL, on both ledgers, and the same without
## fencing; about 25 min), a cluster of mixed releases (the last release that forwarded after
## the cluster's work beside this one, built from git history; about a minute), then the
## GC-pause demo with its outcome asserted. The short versions run in
## `make test`. Both campaigns run until their target, failing with their rate at a maximum
## (RAFTLOCK_VERIFY_MAX 45m, RAFTLOCK_BANK_MAX 30m per ledger; docs/VERIFICATION.md).
verify: build
	$(GO) test -tags verify -count=1 -timeout 60m -run TestCampaign -v ./test/verify/
	$(GO) test -tags verify -count=1 -timeout 75m -run '^TestBankCampaign$$' -v ./test/verify/
	$(GO) test -tags verify -count=1 -timeout 90m -run '^TestSeedCampaign$$' -v ./test/verify/
	RAFTLOCK_EXHAUSTIVE_DEPTH=4 $(GO) test -count=1 -timeout 60m -run '^TestFSM_ExhaustiveSmallBounds$$' -v ./fsm
	$(GO) test -tags verify -count=1 -timeout 15m -run '^TestBlackbox_MixedReleases' -v ./test/blackbox/
	scripts/mutants.sh
	scripts/gc-pause-demo.sh

## mutants: every mutant of internal/mutant against the tests that must kill it (docs/SAFETY.md);
## a survivor fails. `make test` and `make verify` run all of them; MUTANTFLAGS=--repeat 20
## reruns each kill 20 times and counts a mutant killed in fewer than 19 as surviving.
mutants:
	scripts/mutants.sh $(MUTANTFLAGS)

## bench: raftlock beside etcd, ZooKeeper and Redis on this machine (about 17 min; BENCHFLAGS=--quick for about 2)
bench:
	scripts/bench.sh $(BENCHFLAGS)

## screenshot: the README's picture of the dashboard (docs/dashboard.png): the operator's scene of
## test/browser.TestDashboard_OperatorsView (three serve processes, a lock with a waiter, a lockset,
## a semaphore, an election, a refused deadlock) in headless Chromium (scripts/ci-chromium.sh finds or
## installs it); about a minute. No test writes into the tree otherwise.
screenshot:
	RAFTLOCK_CHROMIUM="$${RAFTLOCK_CHROMIUM:-$$(scripts/ci-chromium.sh)}" RAFTLOCK_README_SHOT=$(CURDIR)/docs/dashboard.png \
	  $(GO) test -count=1 -run '^TestDashboard_OperatorsView$$' ./test/browser/

## budget: where one commit's time goes, stage by stage, beside each stage's floor (about 20 s)
budget:
	$(GO) run ./bench/budget $(BUDGETFLAGS)

## demo: the GC-pause double charge with a Redis lock, and its prevention with raftlock
demo:
	scripts/gc-pause-demo.sh

## test-ts: the TypeScript client (clients/typescript): npm ci (the pinned compiler), tsc, its
## unit tests (node --test) and the conformance runner on clients/conformance, each against real
## `raftlock serve` processes (about 45 s)
.PHONY: test-ts demo-ts
test-ts: build
	@scripts/ci-node.sh
	cd clients/typescript && npm ci --no-audit --no-fund --prefer-offline --ignore-scripts --loglevel=error && sh test/native-deps.sh && npm run --silent build
	cd clients/typescript && RAFTLOCK_BIN=$(CURDIR)/$(BIN) npm test --silent
	cd clients/typescript && RAFTLOCK_BIN=$(CURDIR)/$(BIN) npm run --silent conformance
	cd clients/typescript && RAFTLOCK_BIN=$(CURDIR)/$(BIN) npm run --silent consumers

## test-java: the Java client (clients/java), built offline against Debian's Maven repository
## (scripts/ci-java.sh installs it): unit tests, JDBC fencing on PostgreSQL
## (RAFTLOCK_TEST_POSTGRES_DSN) and SQLite, the conformance runner against real `raftlock serve`
## processes, then the GC-pause demo with two JVM workers (about 2-3 min)
MVN_DEBIAN = mvn -B -o -Pdebian -Dmaven.repo.local=/usr/share/maven-repo
.PHONY: test-java
test-java: build
	@scripts/ci-java.sh
	cd clients/java && RAFTLOCK_BIN=$(CURDIR)/$(BIN) $(MVN_DEBIAN) package
	RAFTLOCK_BIN=$(CURDIR)/$(BIN) clients/java/examples/gc-pause/run.sh

## demo-ts: the GC-pause demo with Node worker processes (clients/typescript/examples; about 10 s)
demo-ts: build
	$(GO) build -o bin/ledger ./cmd/ledger
	cd clients/typescript && npm ci --no-audit --no-fund --prefer-offline --ignore-scripts --loglevel=error && npm run --silent build
	cd clients/typescript && RAFTLOCK_BIN=$(CURDIR)/$(BIN) LEDGER_BIN=$(CURDIR)/bin/ledger node build/examples/gc-pause-demo.js

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet $(PKGS)

clean:
	rm -rf bin .raftlock
