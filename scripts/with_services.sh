#!/usr/bin/env bash
# Run a command with the services the tests need started first and stopped after.
# Today: a private Docker engine for the docker sandbox tests, when one can start here.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
started_docker=0
if [ -x "$here/dockerd.sh" ] && [ -z "${FLYWHEEL_NO_DOCKER:-}" ]; then
  if "$here/dockerd.sh" start; then started_docker=1; export DOCKER_HOST="unix://${FLYWHEEL_DOCKER_ROOT:-/tmp/flywheel-docker}/docker.sock"; fi
fi
"$@"
rc=$?
[ "$started_docker" = 1 ] && "$here/dockerd.sh" stop
exit $rc
