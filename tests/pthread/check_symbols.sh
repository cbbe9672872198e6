#!/bin/sh
# check_symbols.sh DROPIN LIBSWARM OBJECTS...
# The runtime is compiled once: the same objects go into libswarm and into
# the drop-in (src/os/sys.h). Inside the drop-in, a call from them to a name
# the drop-in defines (read, pthread_mutex_lock, ...) would call swarm from
# inside swarm, so none may name one: they reach libc through os/sys.h
# (system calls, and libc_X bound with dlsym(RTLD_NEXT) in the drop-in).
# Also: the drop-in defines what programs call, and libswarm needs no dlsym
# (a statically linked program has none).
set -u
lib=$1; libswarm=$2; shift 2
defined=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
undef=$(nm -u "$@" | awk 'NF==2 {print $2}' | sed 's/@.*//' | sort -u)
# What the runtime objects define themselves (sync/cxx_eh.c's
# __cxa_get_globals, which runtime.c refers to) is theirs, not the drop-in's.
own=$(nm --defined-only "$@" | awk 'NF==3 {print $3}' | sort -u)
bad=$(printf '%s\n%s\n' "$defined" "$undef" | sort | uniq -d | grep -v '^swarm_' || true)
bad=$({ printf '%s\n' "$own" | sed 's/^/own /'; printf '%s\n' "$bad" | sed 's/^/bad /'; } |
  awk '$1 == "own" { own[$2] = 1; next } NF == 2 && !($2 in own) { print $2 }')
if [ -n "$bad" ]; then
  echo "runtime objects call drop-in definitions: $bad" >&2
  exit 1
fi
# The check must have looked at something: the runtime makes kernel
# threads, so some object refers to the libc binding.
printf '%s\n' "$undef" | grep -qx libc_pthread_create ||
  { echo "no runtime object refers to libc_pthread_create: wrong objects?" >&2; exit 1; }
for f in pthread_create pthread_mutex_lock pthread_cond_wait sem_wait sched_yield \
         nanosleep fork pthread_yield __pthread_register_cancel \
         read write close fcntl pipe pread pread64 pwrite pwrite64 preadv64 pwritev64 fsync \
         sendfile sendfile64; do
  printf '%s\n' "$defined" | grep -qx "$f" || { echo "drop-in does not define $f" >&2; exit 1; }
done
if nm -D --undefined-only "$libswarm" | awk '{print $2}' | sed 's/@.*//' | grep -qx dlsym; then
  echo "libswarm refers to dlsym (only the drop-in's libc binding may)" >&2
  exit 1
fi
echo "PASS dropin_symbols"
