# Herald: `make run` sets up, builds and starts Herald; `make test` sets up and runs every test.
# Both install what a fresh Debian machine lacks (as root, or through sudo), idempotently.

SWIFT        ?= swift
PYTHON       ?= python3
# The Python test dependencies live in a virtual environment under the checkout: Debian's own
# python3 refuses system-wide pip installs (PEP 668), and nothing here needs them outside tests.
VENV         := .venv
VENV_PYTHON  := $(VENV)/bin/python
HERALD       := .build/debug/herald
APT_PACKAGES := libsodium-dev libsqlite3-dev libssl-dev libcurl4-openssl-dev pkg-config nghttp2-client postgresql \
                python3-venv systemd chromium chromium-driver prometheus debootstrap dpkg-dev patchelf
PY_PACKAGES  := pynacl pytest aioapns==4.0 pyyaml jsonschema openapi-spec-validator selenium http-ece py-vapid pywebpush
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test setup system-deps python-deps build keys lint format unit interop deploy-check deb bench clean

# Starts `herald serve` with its embedded defaults: relay on 8080, SQLite under data/, and the APNs
# sandbox in-process (2197/2198) with development keys under keys/. Ctrl-C stops it gracefully.
run: setup build keys
	$(HERALD) serve

test: setup build lint deploy-check unit interop

setup: system-deps python-deps

# Installs only what is missing, so a second run is quiet and quick.
system-deps:
	@missing=""; for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing system packages:$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

python-deps:
	@[ -x $(VENV_PYTHON) ] || $(PYTHON) -m venv $(VENV)
	@$(VENV_PYTHON) -c "import nacl, pytest, aioapns, yaml, jsonschema, openapi_spec_validator, selenium, http_ece, py_vapid, pywebpush, cryptography" 2>/dev/null || \
		$(VENV_PYTHON) -m pip install --quiet --disable-pip-version-check $(PY_PACKAGES)

build:
	$(SWIFT) build

# Development keys under keys/ (never committed): the master key and an APNs-style auth key.
keys: build
	@[ -f keys/master.key ] || $(HERALD) keys master --out keys/master.key
	@ls keys/AuthKey_*.p8 >/dev/null 2>&1 || $(HERALD) keys apns --out keys

lint:
	$(SWIFT) format lint --strict --recursive --parallel Package.swift Sources Tests

format:
	$(SWIFT) format format --in-place --recursive --parallel Package.swift Sources Tests

# The PostgreSQL store's tests run against a throw-away cluster (scripts/with-postgres.sh), stopped
# when the tests end, whatever their outcome.
unit:
	scripts/with-postgres.sh $(SWIFT) test --no-parallel

# Likewise the interop tests: the cluster test (Tests/interop/test_cluster.py) runs three relay
# nodes on the throw-away PostgreSQL and restarts it; the other tests do not use it.
interop: build
	HERALD_BIN=$(HERALD) scripts/with-postgres.sh $(VENV_PYTHON) -m pytest -q Tests/interop

# The systemd unit under deploy/, as systemd reads it (verify, and its exposure score); and the unit
# the Debian package installs, made from it (scripts/build-deb.sh --unit).
deploy-check: build
	HERALD_BIN=$(HERALD) scripts/check-deploy.sh deploy/herald.service
	@unit=$$(mktemp --suffix=.service) && scripts/build-deb.sh --unit $$unit && \
		HERALD_BIN=$(HERALD) scripts/check-deploy.sh $$unit; status=$$?; rm -f $$unit; exit $$status

# herald_<version>_amd64.deb in DEB_DIR (docs/operations.md, "Install from the Debian package"): a
# release build with the Swift runtime linked in statically. `make deb CONFIG=debug` packages a debug
# build; `make deb HERALD_BIN=path` packages a binary already built; DEB_COMPRESS="-Zgzip -z1" packs
# faster than the default xz. scripts/check-deb.sh installs a package in a fresh Debian 12 root.
CONFIG       ?= release
DEB_DIR      ?= .
DEB_COMPRESS ?= -Zxz
deb: system-deps
ifeq ($(HERALD_BIN),)
	$(SWIFT) build -c $(CONFIG) --product herald --static-swift-stdlib
	HERALD_DEB_COMPRESS="$(DEB_COMPRESS)" scripts/build-deb.sh .build/$(CONFIG)/herald $(DEB_DIR)
else
	HERALD_DEB_COMPRESS="$(DEB_COMPRESS)" scripts/build-deb.sh $(HERALD_BIN) $(DEB_DIR)
endif

bench: setup
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

clean:
	rm -rf .build Benchmarks/.build
