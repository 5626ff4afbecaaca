#!/bin/bash
# The health gate a BIRD user builds for a VIP in `protocol static`: run CHECK (a shell command,
# here curl against the apiserver's /readyz) every INTERVAL seconds; on the first failure
# `birdc disable` the static protocols (the VIP is withdrawn), on the first pass `enable` them.
# Bounded: exits after an hour (the benchmark's lab also stops it by PID).
# Usage: bird_check.sh BIRD_SOCKET INTERVAL CHECK
sock=$1 interval=$2 check=$3
state=unknown
while [ "$SECONDS" -lt 3600 ]; do
  if bash -c "$check" >/dev/null 2>&1; then want=enable; else want=disable; fi
  if [ "$want" != "$state" ]; then
    birdc -s "$sock" "$want" origin4 >/dev/null
    birdc -s "$sock" "$want" origin6 >/dev/null
    echo "$(date +%s.%N) $want"
    state=$want
  fi
  sleep "$interval"
done
