#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ (once) and fuzzes them.
#
#   tests/fuzz/run.sh [--merge] TARGET|all SECONDS
#
# Each target runs for SECONDS starting from its checked-in corpus (tests/fuzz/corpus/TARGET,
# read only); the inputs it finds go to a scratch directory. --merge then adds to the checked-in
# corpus only those that add coverage (libFuzzer -merge=1), so it stays small. Crashes, leaks,
# timeouts and out-of-memory inputs are kept with the log in
# build-fuzz/fuzz-artifacts/TARGET/<time of the run>/; the script
# prints one line per target (executions, exec/s, coverage at start and end, new inputs,
# findings) and exits 1 if any target found something.
#
# Needs clang and libFuzzer (Debian 12: apt-get install clang libclang-rt-14-dev). Run it with
# nice -n 19 on a shared machine. VIPD_FUZZ_BUILD_DIR overrides build-fuzz/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${VIPD_FUZZ_BUILD_DIR:-$root/build-fuzz}

merge=false
if [[ ${1:-} == --merge ]]; then
  merge=true
  shift
fi
if [[ $# -ne 2 || ! $2 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [--merge] TARGET|all SECONDS" >&2
  exit 2
fi
which=$1
seconds=$2

# The targets are the .cc files here, less the replay main.
all=()
for f in "$here"/*.cc; do
  name=$(basename "$f" .cc)
  [[ $name == replay_main ]] || all+=("$name")
done
if [[ $which == all ]]; then
  targets=("${all[@]}")
elif [[ -f $here/$which.cc && $which != replay_main ]]; then
  targets=("$which")
else
  echo "unknown target '$which'; known: ${all[*]}" >&2
  exit 2
fi

if ! command -v clang++ >/dev/null; then
  echo "clang++ not found: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi
if [[ $(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a) != /* ]]; then
  echo "libFuzzer (libclang_rt.fuzzer) not found: apt-get install libclang-rt-14-dev" >&2
  exit 1
fi
if [[ ! -f $build/build.ninja ]]; then
  CXX=clang++ CC=clang meson setup "$build" "$root" -Dfuzz=true
fi
ninja -C "$build" "${targets[@]/#/tests/fuzz/fuzz_}"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '%-16s %8s %12s %8s %15s %8s %9s\n' target seconds executions exec/s "cov start->end" new findings
failed=0
stamp=$(date +%Y%m%d-%H%M%S)
for t in "${targets[@]}"; do
  corpus=$here/corpus/$t
  artifacts=$build/fuzz-artifacts/$t/$stamp
  mkdir -p "$corpus" "$artifacts" "$scratch/$t"
  log=$artifacts/fuzz.log
  # -rss_limit_mb and -timeout: an input that takes over 2 GB or 10 s is a finding too.
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 \
    -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$artifacts/" \
    "$scratch/$t" "$corpus" >"$log" 2>&1 || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  newUnits=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  covStart=$(sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' "$log" | tail -1)
  covEnd=$(grep -o ' cov: [0-9]*' "$log" | tail -1 | tr -dc 0-9)
  findings=$(find "$artifacts" -maxdepth 1 -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  if grep -q '^==[0-9]*==ERROR\|^SUMMARY: \|fuzz invariant broken' "$log"; then
    findings=$((findings > 0 ? findings : 1))
  fi
  printf '%-16s %8s %12s %8s %15s %8s %9s\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" \
    "${covStart:-?}->${covEnd:-?}" "${newUnits:-?}" "$findings"
  if ((findings > 0)); then
    failed=1
    echo "  $t: see $log and $artifacts/" >&2
  fi
  if $merge; then
    "$build/tests/fuzz/fuzz_$t" -merge=1 "$corpus" "$scratch/$t" >>"$log" 2>&1
  fi
done
exit $failed
