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

echo "--- go test ./... (berth.io/berth)"
go test "$@" ./...
echo "--- go test ./... (test/s3: the model stores against a real S3 server)"
(cd test/s3 && go test "$@" ./...)
