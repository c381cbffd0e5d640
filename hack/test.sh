#!/usr/bin/env bash
# Every test berth has, in one command (the README's), in two tiers:
#
#   quick  go test ./...                  unit tests, the e2e suite on its
#                                         shared cluster, one smoke test of
#                                         each long feature (about 10 min)
#   long   go test -tags long ./test/long/...
#                                         rehearsal scenarios, Karpenter's
#                                         controllers, Kueue's (built as
#                                         berth-kueue), the dashboard in
#                                         Chromium
#
# then the model stores against a real S3 server in test/s3, a module of
# its own so that versitygw's newer golang.org/x/* requirements never
# reach the control plane's build. Arguments go to every `go test` run
# (-count=1, -run, -v ...). BERTH_TIER=quick runs the quick tier alone.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
tier="${BERTH_TIER:-all}"

echo "--- go test ./... (the quick tier)"
go test -timeout 30m "$@" ./...
if [ "$tier" = quick ]; then
  exit 0
fi

# The dashboard's browser tests (test/long/dash) drive Debian's Chromium;
# under CI=true they fail without it rather than skip.
if ! command -v chromium >/dev/null 2>&1; then
  echo "--- apt-get install chromium (the dashboard's browser tests)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  $sudo apt-get update && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi
echo "--- go test -tags long ./test/long/... (the long tier)"
# One package at a time: Karpenter's periods and the browser run on wall
# time, and a rehearsal beside them would share the two cores.
go test -tags long -p 1 -timeout 60m "$@" ./test/long/...
echo "--- go test ./... (test/s3: the model stores against a real S3 server)"
(cd test/s3 && go test "$@" ./...)
