# The two commands a newcomer needs: `make demo` and `make test`.
GO ?= go
SHELL := /bin/bash

.PHONY: demo test test-short lint bench bench-real fuzz pgo

# The main job: the binlog-tail demo on an embedded fake server (no database needed).
demo:
	$(GO) run ./cmd/binlog-tail --demo

# Every test, integration tests on throwaway MariaDB servers included.
# Installs mariadb-server when it is missing (Debian; needs root).
# -pgo=off: with binlog-tail's default.pgo the race-enabled test binaries
# would need every dependency compiled twice (about 100 s more from a
# cold cache); the profile changes what the compiler inlines, not what
# the code does.
test: lint
	@command -v mariadbd >/dev/null 2>&1 || bash .ci/install-mariadb
	BINLOGSTREAM_REQUIRE_MARIADB=1 $(GO) test -race -pgo=off -count=1 -timeout 15m ./...

# Unit tests only; integration tests skip when mariadbd is absent.
test-short:
	$(GO) test -count=1 ./...

# gofmt, go vet, no committed build outputs (ELF binaries, files over 1 MiB),
# no command that links package testing (test code in a shipped binary),
# and no package under internal/ that imports the root (internal/ holds leaves).
lint:
	@bash .ci/check-committed-files
	@out=$$(gofmt -l . | grep -v '^vendor/'); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@GO=$(GO) bash .ci/check-cmds-no-testing
	@GO=$(GO) bash .ci/check-internal-leaves

# Benchmarks on the fake primary and in-process, plus the real-MariaDB ones
# (the snapshot of a 1M-row table against mariadb-dump among them, and
# binlog-replicate's verification of a 1M-row copy against the copy and
# CHECKSUM TABLE)
# but the 1 GiB transaction (10 iterations each: a real server is noisier;
# skipped when mariadbd is missing), and binlog-publish's into a 3-node
# NATS cluster built from the module. The output ends with one table.
bench:
	@command -v mariadbd >/dev/null 2>&1 || echo "bench: mariadbd not found, the BenchmarkReal* benchmarks will skip (make bench-real needs it)"
	set -o pipefail; { $(GO) test -run '^$$' -bench . -skip 'BenchmarkReal' -benchmem -count 3 ./... && \
	  $(GO) test -run '^$$' -bench 'BenchmarkReal(MariaDB|SmallEvents|Resume)' -benchtime 10x -count 3 . && \
	  $(GO) test -run '^$$' -bench 'BenchmarkReal(DecodeFamilies|TableFilter|TailMixes)' -benchtime 3x -count 2 . && \
	  $(GO) test -run '^$$' -bench 'BenchmarkRealSnapshot' -benchtime 2x -count 1 . && \
	  $(GO) test -run '^$$' -bench 'BenchmarkRealReplicate' -benchtime 1x -count 3 ./cmd/binlog-replicate && \
	  $(GO) test -run '^$$' -bench 'BenchmarkRealVerify' -benchtime 2x -count 1 -timeout 30m ./cmd/binlog-replicate && \
	  $(GO) test -run '^$$' -bench 'BenchmarkRealPublish' -benchtime 3x -count 2 ./cmd/binlog-publish ; } | $(GO) run ./internal/benchtable

# The real-server benchmarks: the 550k-row binlog (library vs go-mysql,
# binlog-tail vs mariadb-binlog) and the peak RSS through a 1 GiB
# transaction (writing it takes a few minutes).
bench-real:
	@command -v mariadbd >/dev/null 2>&1 || { echo "bench-real: needs mariadbd and mariadb-binlog (apt-get install mariadb-server mariadb-client)"; exit 1; }
	set -o pipefail; $(GO) test -run '^$$' -bench BenchmarkReal -benchtime 5x -count 2 -timeout 30m -v . | $(GO) run ./internal/benchtable

# binlog-tail's profile for profile-guided optimization, which go build
# and go install use by themselves: cmd/binlog-tail/default.pgo, the CPU
# profiles of binlog-tail over BenchmarkRealTailMixes's tables (every type
# family, NO_LOG and FULL metadata, file and GTID mode), 3 runs each, merged.
pgo:
	@command -v mariadbd >/dev/null 2>&1 || { echo "pgo: needs mariadbd and mariadb-binlog"; exit 1; }
	d=$$(mktemp -d) && BINLOGSTREAM_TAIL_PROFILE=$$d $(GO) test -run '^$$' -bench BenchmarkRealTailMixes -benchtime 3x -count 1 . && \
	  $(GO) tool pprof -proto $$d/*.pprof > cmd/binlog-tail/default.pgo && rm -rf $$d

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseResumePosition -fuzztime 30s .
	$(GO) test -run '^$$' -fuzz FuzzCrashResume -fuzztime 60s .
	$(GO) test -run '^$$' -fuzz FuzzDirSourceGarbage -fuzztime 60s .
	$(GO) test -run '^$$' -fuzz FuzzRowsDecodeEqualsGoMySQL -fuzztime 60s .
