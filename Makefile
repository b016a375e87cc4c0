# Tideway developer entry points. `make run` gives a working dev stack from a
# clean clone on Debian 12; `make test` is what CI runs (.ci/run).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

# Swift is not a Debian package; use /opt/swift when it is there.
export PATH := $(if $(wildcard /opt/swift/usr/bin/swift),/opt/swift/usr/bin:)$(PATH)

DEBIAN_PACKAGES := nginx-light libnginx-mod-nchan libfcgi-dev libpq-dev libsodium-dev \
	postgresql chromium chromium-driver python3-selenium python3-pytest python3-requests \
	python3-psycopg2 python3-jsonschema python3-yaml wrk openssl curl ca-certificates pkg-config \
	libvips-tools libcurl4-openssl-dev redis-server python3-pymongo zlib1g-dev
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
STACK := Deploy/dev/stack.sh

.PHONY: deps build run stop status test bench clean cluster cluster-stop test-cluster

# Only calls apt-get when something is missing, so it is quick and offline
# once everything is installed.
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -q '^install ok installed$$' || echo "$$p"; \
	done); \
	if [[ -n $$missing ]]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi
	@command -v swift >/dev/null || { echo "swift not found: install Swift 6 (e.g. to /opt/swift)" >&2; exit 1; }

# Every import must be a declared dependency of its target (the layers of Package.swift).
IMPORT_CHECK := --explicit-target-dependency-import-check error

build: deps
	swift build -c release $(IMPORT_CHECK)

# The dev stack in .state/dev. Its ports come from the environment as stack.sh reads them
# (HTTPS_PORT 8443, HTTP_PORT 8080): `HTTPS_PORT=9443 HTTP_PORT=9080 make run` runs a second
# checkout's stack beside the first. stop and status find the stack by its folder alone.
run: build
	$(STACK) up

stop:
	$(STACK) down

status:
	$(STACK) status

test: deps build
	python3 Tests/Architecture/check_layers.py
	python3 Tests/Architecture/check_doc_citations.py
	swift build --build-tests $(IMPORT_CHECK)
	Deploy/dev/test.sh

bench: build
	Deploy/dev/bench.sh

# Three hosts in network namespaces (Deploy/cluster/cluster.sh): two app nodes, a
# database host (PostgreSQL primary + streaming replica, Redis), a front nginx. Root only.
cluster: build
	Deploy/cluster/cluster.sh up

cluster-stop:
	Deploy/cluster/cluster.sh down

test-cluster: build
	Deploy/cluster/test.sh

# Stops every stack under .state (dev, test, bench, clusters), then removes it all.
clean:
	for s in .state/cluster*/; do [[ ! -d $$s ]] || STATE=$$PWD/$${s%/} Deploy/cluster/cluster.sh down; done
	for s in .state/*/; do [[ ! -d $$s ]] || STATE=$$PWD/$${s%/} $(STACK) down; done
	rm -rf .state
