#!/usr/bin/env bash
# The portable engine on older x86-64 CPUs than this machine's: a tiny-model `reposnap ask` and the
# patch series' C++ test (snapkv-compact-test: keep-all and per-head compaction checked cell for
# cell and logit for logit) under Debian's qemu-user-static, emulating
#   Nehalem  (SSE4.2, no AVX)  → ggml must load its sse42 CPU variant,
#   Haswell  (AVX2, no AVX-512) → its haswell variant.
# Each run must pass and name the variant it loaded (reposnap ask --verbose: "CPU variant …").
# A build for this machine's CPU alone (REPOSNAP_PORTABLE=0) dies with SIGILL here instead:
#   REPOSNAP_ADDON=<static build>/reposnap.node bash .ci/qemu-cpu.sh
# shows it (exit 132 under Nehalem).
#
#   bash .ci/qemu-cpu.sh            (needs the engine: npm run build; x86-64 Linux)
# Environment: REPOSNAP_ADDON (the engine to run, default native/build/reposnap.node),
#              QEMU_CPUS (default "Nehalem:sse42 Haswell:haswell"; CPU:variant pairs).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(uname -m)" = x86_64 ] || { echo "qemu-cpu: emulates x86-64 CPUs on an x86-64 machine; this is $(uname -m)" >&2; exit 1; }
if ! command -v qemu-x86_64-static >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null
fi
QEMU=qemu-x86_64-static
MODEL="$(cd .. && pwd)/shared/models/stories260K.gguf"
[ -f "$MODEL" ] || { echo "qemu-cpu: $MODEL is missing" >&2; exit 1; }
ADDON="${REPOSNAP_ADDON:-$PWD/native/build/reposnap.node}"
TEST_EXE="$(dirname "$ADDON")/snapkv-compact-test"

# a repository of two small files: a few hundred tokens of prompt on the tiny model
. .ci/tiny-repo.sh

status=0
for pair in ${QEMU_CPUS:-Nehalem:sse42 Haswell:haswell}; do
  cpu=${pair%%:*}
  want=${pair#*:}
  t0=$(date +%s)
  set +e
  out=$(REPOSNAP_ADDON="$ADDON" REPOSNAP_BACKEND=cpu "$QEMU" -cpu "$cpu" "$(command -v node)" bin/reposnap.js ask --repo "$REPO" --model "$MODEL" \
        --cache-dir "$SMOKE_CACHE/$cpu" --max-tokens 24 --verbose --quiet "What does add return?" 2>&1)
  rc=$?
  set -e
  t1=$(date +%s)
  # (qemu's TCG lists the Haswell features it does not emulate, e.g. TSX: nothing ggml uses)
  grep -v "TCG doesn't support requested feature" <<<"$out" | sed "s/^/[qemu $cpu] /"
  if [ $rc -ne 0 ]; then
    echo "qemu-cpu: FAIL $cpu: reposnap ask exited $rc$([ $rc -eq 132 ] && echo ' (SIGILL: an instruction this CPU does not have)')" >&2
    status=1
    continue
  fi
  if ! grep -q "CPU variant $want;" <<<"$out"; then
    echo "qemu-cpu: FAIL $cpu: expected CPU variant $want" >&2
    status=1
    continue
  fi
  grep -q '^stats: ' <<<"$out" || { echo "qemu-cpu: FAIL $cpu: no stats line (no answer)" >&2; status=1; continue; }
  echo "qemu-cpu: ok $cpu: ask answered on CPU variant $want in $((t1 - t0)) s"
  if [ -x "$TEST_EXE" ]; then
    set +e
    tout=$("$QEMU" -cpu "$cpu" "$TEST_EXE" 2>&1)
    rc=$?
    set -e
    t2=$(date +%s)
    if [ $rc -ne 0 ] || ! grep -q '^PASS: 0 failed$' <<<"$tout"; then
      grep -v "TCG doesn't support requested feature" <<<"$tout" | tail -20 | sed "s/^/[qemu $cpu] /"
      echo "qemu-cpu: FAIL $cpu: snapkv-compact-test exited $rc" >&2
      status=1
    else
      echo "qemu-cpu: ok $cpu: snapkv-compact-test $(grep -c '^ok - ' <<<"$tout") checks passed in $((t2 - t1)) s"
    fi
  fi
done
exit $status
