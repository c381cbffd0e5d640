#!/usr/bin/env bash
# Every test berth has, in one command (the README's): the main module's
# unit tests and its e2e suite on the embedded control plane, then the
# model stores against a real S3 server in test/s3, a module of its own
# so that versitygw's newer golang.org/x/* requirements never reach the
# control plane's build. Arguments go to both `go test` runs (-count=1,
# -run, -v ...).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

# The dashboard's browser tests (test/e2e TestDashInBrowser) drive Debian's
# Chromium; under CI=true they fail without it rather than skip.
if ! command -v chromium >/dev/null 2>&1; then
  echo "--- apt-get install chromium (the dashboard's browser tests)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  $sudo apt-get update && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi

echo "--- go test ./... (berth.io/berth)"
# The e2e package runs longer than go test's default 10 minutes (about
# 25 on two cores); a -timeout among the arguments overrides this one.
go test -timeout 60m "$@" ./...
echo "--- go test ./... (test/s3: the model stores against a real S3 server)"
(cd test/s3 && go test "$@" ./...)
