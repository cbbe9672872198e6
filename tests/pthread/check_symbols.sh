#!/bin/sh
# check_symbols.sh LIB OBJECTS...
# The runtime objects inside the drop-in must not call any function the
# drop-in itself defines (they would call swarm from inside swarm): every
# such call must have been renamed by sys_names.h.
set -u
lib=$1; shift
defined=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
undef=$(nm -u "$@" | awk 'NF==2 {print $2}' | sed 's/@.*//' | sort -u)
bad=$(printf '%s\n%s\n' "$defined" "$undef" | sort | uniq -d | grep -v '^swarm_' || true)
if [ -n "$bad" ]; then
  echo "runtime objects call drop-in definitions: $bad" >&2
  exit 1
fi
for f in pthread_create pthread_mutex_lock pthread_cond_wait sem_wait sched_yield \
         nanosleep fork pthread_yield __pthread_register_cancel \
         read write pread pread64 pwrite pwrite64 preadv64 pwritev64 fsync; do
  printf '%s\n' "$defined" | grep -qx "$f" || { echo "drop-in does not define $f" >&2; exit 1; }
done
echo "PASS dropin_symbols"
