#!/usr/bin/env bash
# Installs the Debian packages swarm's build, tests and benchmarks need.
# Idempotent: packages already installed are left alone and apt is not run at
# all when nothing is missing. Uses sudo when not root.
# Package lists live in tools/deps/*.txt, one package per line (# comments).
# A group may also have tools/deps/GROUP.post, run after its packages are
# present (every time, so it must be idempotent), e.g. to pin alternatives.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(core)
want=()
for g in "${groups[@]}"; do
  f="$here/deps/$g.txt"
  [ -f "$f" ] || { echo "install-deps: no package list $f" >&2; exit 2; }
  while read -r p _; do
    case "$p" in ''|'#'*) continue ;; esac
    want+=("$p")
  done <"$f"
done
missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
post() {
  for g in "${groups[@]}"; do
    [ ! -x "$here/deps/$g.post" ] || "$here/deps/$g.post"
  done
}
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#want[@]} packages present (${groups[*]})"
  post
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt/dpkg run (unattended upgrades) instead of failing.
lock="-o DPkg::Lock::Timeout=300"
$sudo apt-get $lock update -qq
$sudo apt-get $lock install -y -qq --no-install-recommends "${missing[@]}"
post
