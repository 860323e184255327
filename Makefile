# Build, test and benchmark targets. `make help` lists them.
GO      ?= go
BIN     ?= bin
PKGS    ?= ./...
BINARIES = claw cllama claw-mcp-stdio claw-mcp-echo claw-model

.PHONY: help build test bench fuzz vet fmt-check tidy-check ci demo images clean

help:
	@echo "make build      build $(BINARIES) into $(BIN)/"
	@echo "make test       run every test with the race detector (what CI runs)"
	@echo "make bench      run the benchmarks and print their figures"
	@echo "make fuzz       run each fuzz target for FUZZTIME (default 20s)"
	@echo "make images     build every pod image FROM scratch (no registry needed)"
	@echo "make demo       build images, run the example pod, show what happened"
	@echo "make ci         gofmt check, go mod tidy check, go vet, make test"

build:
	@mkdir -p $(BIN)
	@for b in $(BINARIES); do [ -d cmd/$$b ] && $(GO) build -o $(BIN)/$$b ./cmd/$$b || exit 1; done

test:
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -skip 'BenchmarkFloor|BenchmarkStartup' -benchmem $(PKGS)
	@# Last: cllama against a bare reverse proxy, same run, as summary tables
	@# (in one process, then as processes of their own; then starting, with
	@# its resident memory at start and idle).
	$(GO) test -run '^$$' -bench BenchmarkFloor -benchtime 2000x ./internal/proxy/
	$(GO) test -run '^$$' -bench BenchmarkFloorProcess -benchtime 1x ./cmd/cllama/
	$(GO) test -run '^$$' -bench BenchmarkStartup -benchtime 1x ./cmd/cllama/

FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

ci: fmt-check tidy-check vet test

clean:
	rm -rf $(BIN)

images:
	scripts/images.sh

demo:
	scripts/demo.sh
