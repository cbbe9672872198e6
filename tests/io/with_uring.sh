#!/bin/sh
# with_uring.sh PROBE COMMAND...: runs COMMAND with SWARM_IO=uring (the
# io_uring back end). Skipped (exit 77, the reason printed) only when the
# kernel refuses io_uring (PROBE --probe: test_io_backend's probe, which
# tries the features the back end uses); any other failure is a failure.
set -u
probe=$1; shift
why=$("$probe" --probe)
rc=$?
if [ $rc -eq 77 ]; then
  echo "SKIP: the kernel refuses io_uring here: $why"
  exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: io_uring probe: $why ($rc)" >&2; exit 1; }
SWARM_IO=uring exec "$@"
