#!/bin/sh
# swarmrun: usage errors exit 2; the program's exit status passes through;
# -w sets the worker count the program sees.
set -u
sr=$1
"$sr" >/dev/null 2>&1; [ $? -eq 2 ] || { echo "no program: expected 2" >&2; exit 1; }
"$sr" -w x -- true >/dev/null 2>&1; [ $? -eq 2 ] || { echo "bad -w: expected 2" >&2; exit 1; }
"$sr" --bogus -- true >/dev/null 2>&1; [ $? -eq 2 ] || { echo "bad option: expected 2" >&2; exit 1; }
"$sr" -- sh -c 'exit 7'; [ $? -eq 7 ] || { echo "status not passed through" >&2; exit 1; }
w=$("$sr" -w 3 -- sh -c 'echo $SWARM_WORKERS'); [ "$w" = 3 ] || { echo "-w 3 gave '$w'" >&2; exit 1; }
p=$("$sr" -- sh -c 'echo $LD_PRELOAD'); case "$p" in *libswarm-pthread.so*) ;; *) echo "no preload: $p" >&2; exit 1 ;; esac
echo "PASS dropin_swarmrun_usage"
