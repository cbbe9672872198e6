#!/usr/bin/env bash
# Checks the Debian packages `make package` builds (cmake/packaging.cmake)
# the way a user meets them, without touching this machine's own dpkg
# database: every .deb is installed with dpkg into a throwaway root (its own
# --instdir and --admindir), then
#   - a C program builds against the installed tree with pkg-config and with
#     find_package(swarm), and runs;
#   - the installed swarmrun runs Debian's pigz on swarm threads (the output
#     round-trips and --stats shows threads ran on swarm);
#   - every man page the packages carry renders (`man -l`), one per public
#     function (tools/gen-man.py --list);
#   - the MPI package, when built, depends on the MPI library its files link;
# and purging the packages leaves no file behind outside dpkg's database.
# Usage: tests/install/package.sh BUILD_DIR   (packages in BUILD_DIR/packages)
set -euo pipefail
build=$(cd "${1:?usage: package.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
debs=("$build"/packages/*.deb)
[ -f "${debs[0]}" ] || { echo "test-package: no .deb in $build/packages (make package)"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
root=$scratch/root
admin=$root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates"
: >"$admin/status"
# The throwaway root has no libc6/python3 recorded: dependencies are checked
# by reading the control fields below instead.
fakedpkg() {
  dpkg --force-not-root --force-depends --force-script-chrootless \
    --instdir="$root" --admindir="$admin" "$@"
}
fail() { echo "test-package: FAIL: $*"; exit 1; }

fakedpkg -i "${debs[@]}" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -i"; }
pkgs=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done)
for p in libswarm0 libswarm-dev swarmrun; do
  grep -qx "$p" <<<"$pkgs" || fail "package $p was not built"
done
usr=$root/usr
libdir=$(dirname "$(find "$usr" -name libswarm.so.0 | head -n1)")
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# 1. pkg-config and find_package against the installed tree
pcdir=$(dirname "$(find "$usr" -name swarm.pc | head -n1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs swarm)
cc -std=gnu11 -O2 "$here/consumer/consumer.c" -o "$scratch/pc" $flags
out=$("$scratch/pc")
[ "$out" = "fib(20) = 6765" ] || fail "pkg-config consumer printed '$out'"
echo "ok  pkg-config consumer: $out"
cmake -S "$here/consumer" -B "$scratch/cm" -DCMAKE_PREFIX_PATH="$usr" >/dev/null
cmake --build "$scratch/cm" >/dev/null
out=$("$scratch/cm/consumer")
[ "$out" = "fib(20) = 6765" ] || fail "find_package consumer printed '$out'"
grep -q "$usr" "$scratch/cm/CMakeCache.txt" || fail "find_package did not use the packaged swarm"
echo "ok  find_package consumer: $out"

# 2. swarmrun from the package, on an unmodified pigz
if command -v pigz >/dev/null 2>&1; then
  seq 1 200000 >"$scratch/in"
  "$usr/bin/swarmrun" -w 2 --stats -- pigz -p 4 -c "$scratch/in" >"$scratch/in.gz" 2>"$scratch/err" ||
    { cat "$scratch/err"; fail "swarmrun -- pigz"; }
  pigz -d -c "$scratch/in.gz" | cmp -s - "$scratch/in" || fail "pigz's output does not round-trip"
  spawned=$(awk '/^swarm stats: [0-9]/ { s += $4 } END { print s + 0 }' "$scratch/err")
  [ "$spawned" -ge 4 ] || { cat "$scratch/err"; fail "only $spawned threads ran on swarm"; }
  echo "ok  packaged swarmrun -- pigz -p 4: round-trips, $spawned threads on swarm"
  if "$usr/bin/swarmrun" --stats=soon -- true 2>"$scratch/err"; then fail "swarmrun took --stats=soon"; fi
  grep -q "needs an interval" "$scratch/err" || fail "swarmrun --stats=soon: $(cat "$scratch/err")"
else
  fail "pigz not installed (make deps installs it)"
fi

# 3. man pages: one per public function, each renders
if [ -x "$src/tools/gen-man.py" ]; then
  n=0
  while read -r fn; do
    page=$(find "$usr/share/man/man3" -name "$fn.3*" | head -n1)
    [ -n "$page" ] || fail "no man page for $fn"
    MANWIDTH=80 man -l "$page" 2>"$scratch/man.err" | grep -q "$fn" || { cat "$scratch/man.err"; fail "man -l $page"; }
    n=$((n + 1))
  done < <(python3 "$src/tools/gen-man.py" --list "$src/include")
  page=$(find "$usr/share/man/man1" -name "swarmrun.1*" | head -n1)
  [ -n "$page" ] && MANWIDTH=80 man -l "$page" | grep -q -- "--stats" || fail "swarmrun(1) missing or empty"
  echo "ok  $n man pages (3) and swarmrun(1) render"
fi

# 4. the MPI package depends on the MPI it was built for
if grep -qx libswarm-mpi0 <<<"$pkgs"; then
  deb=$(ls "$build"/packages/libswarm-mpi0_*.deb)
  dep=$(dpkg-deb -f "$deb" Depends)
  mpilib=$(ldd "$(find "$usr" -name 'libswarm-cio.so.0' | head -n1)" | awk '/libmpi\.so/ { print $3 }')
  [ -n "$mpilib" ] || fail "libswarm-cio links no libmpi"
  mpipkg=$(dpkg -S "$(readlink -f "$mpilib")" 2>/dev/null | cut -d: -f1 | head -n1)
  [ -n "$mpipkg" ] && grep -q "$mpipkg" <<<"$dep" || fail "libswarm-mpi0 depends on '$dep', not on $mpipkg ($mpilib)"
  echo "ok  libswarm-mpi0 depends on $mpipkg ($dep)"
fi

# 5. purge leaves nothing behind
fakedpkg -P $pkgs >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -P"; }
left=$(cd "$root" && find . -mindepth 1 -not -type d -not -path './var/lib/dpkg/*')
[ -z "$left" ] || fail "left behind after purge: $left"
left=$(cd "$root" && find . -mindepth 1 -type d -not -path './var*' | head)
[ -z "$left" ] || fail "directories left behind after purge: $left"
echo "test-package: passed (${#debs[@]} packages: $(echo $pkgs))"
