# raftlock: build, run a local three-node cluster, test.
GO       ?= go
BIN      := bin/raftlock
PKGS     := ./...
FUZZTIME ?= 5s

.PHONY: all build run test test-short fuzz verify bench demo clean fmt vet

all: build

build:
	$(GO) build -o $(BIN) ./cmd/raftlock

## run: build, start three nodes in the foreground (Ctrl-C stops them all)
run: build
	RAFTLOCK_BIN=$(BIN) scripts/cluster.sh run

## test: vet, unit and in-process multi-node tests with the race detector, short fuzz runs
test:
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	$(MAKE) --no-print-directory fuzz

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeCommand$$' -fuzztime=$(FUZZTIME) ./fsm
	$(GO) test -run='^$$' -fuzz='^FuzzRestore$$' -fuzztime=$(FUZZTIME) ./fsm

## verify: the longer fault and process-level tests
verify: build
	$(GO) test -race -count=1 -tags verify -timeout 40m ./test/...

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet $(PKGS)

clean:
	rm -rf bin .raftlock
