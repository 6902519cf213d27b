#!/usr/bin/env bash
# The Vulkan lane (issue 18): builds the Vulkan engine and runs the engine tests that matter against
# it with every layer offloaded, on Mesa's lavapipe (software Vulkan: no GPU needed) or on a real
# Vulkan device.
#
#   npm run test:vulkan            (= bash .ci/vulkan.sh; needs node_modules: npm ci)
#
# 1. installs what the build and lavapipe need (Debian: glslc, libvulkan-dev, spirv-headers,
#    mesa-vulkan-drivers) where they are missing, after apt-get update;
# 2. builds the Vulkan backend module native/build/gpu/libggml-vulkan.so beside the portable engine
#    (REPOSNAP_GPU=vulkan npm run build:native, with ccache
#    when installed; the shader generation dominates a cold build: see docs/gpu.md);
# 3. packages the linux-x64 VSIX from it and unpacks it (VULKAN_ENGINE=build skips this and tests
#    native/build), so that what is tested is the packaged engine and its Vulkan module;
# 4. runs the engine tests below with REPOSNAP_ADDON (the Vulkan addon), REPOSNAP_GPU_LAYERS=999 (every
#    layer and the KV cache on the Vulkan device, src/engine/model.ts defaultGpuLayers) and
#    GGML_VK_VISIBLE_DEVICES (default 0: ggml-vulkan skips CPU-type devices such as lavapipe unless
#    they are listed), vulkan.test.ts checks that the model was loaded with those layers. The
#    float64-reference tests hold this engine to half-precision bounds: ggml-vulkan rounds matrix
#    products' operands to f16 (test/helpers/precision.ts; bench/results/vulkan-precision-issue18.md).
#
# Environment: VULKAN_TESTS (the test files, default below), VULKAN_ENGINE (package or build),
# VULKAN_MATRIX=0 (skip the reference-matrix corners: a quick check of a package),
# GGML_VK_VISIBLE_DEVICES, REPOSNAP_JOBS.
# A missing package that cannot be installed, a failed build or a failed test fails the lane: it is
# never skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v apt-get >/dev/null 2>&1; then
  need=()
  for pkg in cmake g++ git ccache glslc libvulkan-dev spirv-headers mesa-vulkan-drivers; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  fi
fi
for tool in glslc cmake; do
  command -v "$tool" >/dev/null || { echo "vulkan lane: '$tool' is missing (Debian: apt-get install glslc libvulkan-dev spirv-headers mesa-vulkan-drivers)" >&2; exit 1; }
done

t0=$(date +%s)
REPOSNAP_GPU=vulkan npm run build:native
t1=$(date +%s)

# the engine as users get it: the linux-x64 VSIX packaged from this build (scripts/package.mjs puts
# native/build/gpu/libggml-vulkan.so in it) and unpacked, whose Vulkan module the tests must load
# (vulkan.test.ts checks it is the one beside the addon); VULKAN_ENGINE=build tests native/build
if [ "${VULKAN_ENGINE:-package}" = package ]; then
  PKG_DIR="$(mktemp -d)"
  trap 'rm -rf "$PKG_DIR"' EXIT
  npm run package -- --target linux-x64 --out "$PKG_DIR/reposnap.vsix"
  (cd "$PKG_DIR" && unzip -q reposnap.vsix 'extension/native/engine/*')
  ENGINE="$PKG_DIR/extension/native/engine/linux-x64"
  [ -f "$ENGINE/gpu/libggml-vulkan.so" ] || { echo "vulkan lane: the package has no gpu/libggml-vulkan.so" >&2; exit 1; }
  echo "vulkan lane: testing the packaged engine $ENGINE ($(du -sh "$ENGINE/gpu/libggml-vulkan.so" | cut -f1) Vulkan module)"
else
  ENGINE="$PWD/native/build"
fi
export REPOSNAP_ADDON="$ENGINE/reposnap.node"
export REPOSNAP_BACKEND=vulkan
export REPOSNAP_GPU_LAYERS=999
export GGML_VK_VISIBLE_DEVICES="${GGML_VK_VISIBLE_DEVICES:-0}"

# keep-all bit-identity and the float64 reference (snapkv), state files (state, state-format),
# guards, shared cells (sequences), and a second compaction of a compacted cache with flash
# attention on (vulkan: the lavapipe fault of issue 18), learned attention sinks in the scores
# (attention-sinks: a chunk's slice of the sinks at an offset); then a subset of the reference matrix:
# flash attention on with an f16 cache and off with an f32 cache (each x window x pooling x kernel
# x budget, 36 cases), the two corners of its four tests
tests=${VULKAN_TESTS:-"test/engine/snapkv.test.ts test/engine/state.test.ts test/engine/state-format.test.ts test/engine/guards.test.ts test/engine/sequences.test.ts test/engine/vulkan.test.ts test/engine/attention-sinks.test.ts test/engine/graph-budget.test.ts"}
status=0
# shellcheck disable=SC2086
node --import tsx --test --test-concurrency=1 $tests || status=1
if [ "${VULKAN_MATRIX:-1}" != 0 ]; then
  node --import tsx --test --test-concurrency=1 --test-name-pattern='matrix: flash attention (on, f16|off, f32) cache' test/engine/matrix.test.ts || status=1
fi
t2=$(date +%s)
echo "vulkan lane: build $((t1 - t0)) s, tests $((t2 - t1)) s"
exit $status
