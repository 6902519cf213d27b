#!/usr/bin/env bash
# native/cuda/build.sh — builds the CUDA backend module, native/build/gpu/libggml-cuda.so, on a machine
# with no CUDA toolkit and no GPU: nvcc, the CUDA headers and the CUDA libraries all come from NVIDIA's
# PyPI wheels, pinned below by version and sha256.
#
#   bash native/cuda/build.sh                     sm_90 (H100 / H200), SASS + PTX
#   bash native/cuda/build.sh --all-archs         sm_80, 86, 89 as SASS and sm_90 as SASS + PTX
#   CUDA_ARCH='80;86;89;90' bash native/cuda/build.sh    any CMAKE_CUDA_ARCHITECTURES list
#   bash native/cuda/build.sh --bundle            also copy libcudart / libcublas / libcublasLt from the
#                                                 wheels beside the module (see "At run time"; a run
#                                                 without it removes them)
#   bash native/cuda/build.sh --toolkit-only      only download and assemble the CUDA root; prints its path
#
# What it does:
#   1. `pip download --no-deps --require-hashes` of the wheels below into $REPOSNAP_CUDA_CACHE/wheels
#      (default ~/.cache/reposnap-cuda; 494 MiB, once; the cuBLAS wheel is 385 MiB of it);
#   2. unpacks them into one CUDA root, $REPOSNAP_CUDA_CACHE/cuda-<version> (~0.85 GB), that CMake takes as
#      a toolkit (CMAKE_CUDA_COMPILER, FindCUDAToolkit): the CUDA 13 wheels all unpack into nvidia/cu13/
#      with bin/nvcc (+ nvcc.profile), nvvm/bin/cicc, include/ (+ include/cccl: CUB / Thrust, which
#      ggml-cuda's argsort, top-k, cumsum, sum, mean and ssm-scan include), lib/. The script adds
#      what a toolkit has and the wheels lack:
#        - lib64 -> lib, and the unversioned link names (libcudart.so, libcublas.so, libcublasLt.so);
#        - lib/stubs/libcuda.so, a stub of the driver library (SONAME libcuda.so.1, every cu* function
#          that cuda.h declares, each an empty body), for ggml-cuda's VMM pool (cuMemCreate …): the
#          link needs it, the real one is the NVIDIA driver's at run time. No wheel ships it.
#      CMake's compiler check links libcudart_static.a, which the runtime wheel does ship; the module
#      itself links the shared runtime (CMAKE_CUDA_RUNTIME_LIBRARY=Shared, as ggml's CUDA::cudart does);
#   3. runs `REPOSNAP_GPU=cuda CUDA_ARCH=… nice -n 19 node native/build.mjs`: the CPU engine first
#      (a no-op when it is built), then ggml-cuda in native/build/cmake-cuda from the same patched tree,
#      installed as native/build/gpu/libggml-cuda.so (ccache on nvcc too, where ccache is installed).
#      That is 143 nvcc compiles for one arch (ggml-cuda's sources and template instances; an mmq
#      instance takes ~45 CPU-s for sm_90), each listed arch adds about as much again. An interrupted
#      build goes on where it stopped when run again (the objects stay in native/build/cmake-cuda).
#
# Why CUDA 13: NVIDIA's CUDA 12 nvcc wheels (nvidia-cuda-nvcc-cu12, every version up to 12.9.86)
# hold only ptxas, libnvvm and libdevice, with no nvcc, cicc, cudafe++, fatbinary or nvlink. Only
# the CUDA 13 wheels (nvidia-cuda-nvcc, -crt, nvvm) can compile .cu files.
#
# At run time libggml-cuda.so needs (readelf -d):
#   libcuda.so.1        the NVIDIA driver's: driver >= 580 (R580, the first with CUDA 13) for any CUDA 13 build
#   libcudart.so.13, libcublas.so.13 (→ libcublasLt.so.13)
#                       the user's CUDA 13 install (e.g. /usr/local/cuda-13/lib64 on the loader's
#                       path), or the same wheels: `pip install nvidia-cuda-runtime nvidia-cublas` and
#                       LD_LIBRARY_PATH=<site-packages>/nvidia/cu13/lib, or --bundle, which copies
#                       them into gpu/ beside the module, where its RUNPATH ($ORIGIN) finds them.
# --bundle adds ~560 MB (libcublasLt.so.13 is 505 MB), so it is for a GPU machine or a tarball, not
# for a VSIX (Open VSX takes ~256 MB). Without them the engine notes that the CUDA module could not
# be loaded and runs on the CPU (native/addon/backends.cpp; REPOSNAP_BACKEND=auto|cuda).
# GPUs: sm_75 and newer are what CUDA 13 builds for; the module has SASS for the listed archs and
# PTX of the highest (90), which the driver compiles at first use on newer GPUs (Blackwell).
#
# Environment: CUDA_ARCH (default 90), REPOSNAP_JOBS (default: cores), REPOSNAP_OUT (as build.mjs),
#   REPOSNAP_CUDA_CACHE (default ~/.cache/reposnap-cuda), PYTHON (default python3, for pip).
# Needs: Linux x86-64, python3 with pip, gcc/g++ <= 15, cmake, git, node, the repository's node_modules.
set -euo pipefail
cd "$(dirname "$0")/../.."

# CUDA 13.2 update (nvcc 13.2.86) and cuBLAS 13.3.0.5; the sha256 of each x86-64 wheel
WHEELS=(
  "nvidia-cuda-nvcc==13.2.86 --hash=sha256:7d3f56c8d705bad35bbba69eb0470d90856fd5d4dc48c6a6173aaf1e9f887cf5"
  "nvidia-cuda-crt==13.2.86 --hash=sha256:e3ab08801bf9b1e6dc979275d25e816bb5000521b648e19c324d5eef0c79f1da"
  "nvidia-nvvm==13.2.86 --hash=sha256:a9244f3209922d655612c11ebb4117ea1f80983cb2b215c9cccded127282cebc"
  "nvidia-cuda-runtime==13.2.86 --hash=sha256:3498247680dfddce31bad102af7e3e26fc795342a3cac64722bb0fa95e7f60f0"
  "nvidia-cuda-cccl==13.2.86 --hash=sha256:35da671cf0cecd3539da214a11bb8e7634366c9e950da9c5feecf6c490a65b20"
  "nvidia-cublas==13.3.0.5 --hash=sha256:366568e2dc59e6fe71ffd179f9f2a38b8b2772aed626320a64008651b1e72974"
)
CUDA_VERSION=13.2.86
BUNDLE_LIBS=(libcudart.so.13 libcublas.so.13 libcublasLt.so.13)

bundle=0 toolkit_only=0 arch=${CUDA_ARCH:-90}
for a in "$@"; do
  case "$a" in
    --bundle) bundle=1 ;;
    --toolkit-only) toolkit_only=1 ;;
    --all-archs) arch='80-real;86-real;89-real;90' ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "native/cuda/build.sh: unknown option '$a' (--all-archs, --bundle, --toolkit-only, --help)" >&2; exit 2 ;;
  esac
done

log() { echo "[cuda] $*"; }
die() { echo "[cuda] error: $*" >&2; exit 1; }

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || die "Linux x86-64 only (the pinned hashes are the x86-64 wheels'; here: $(uname -s)-$(uname -m))"
py=${PYTHON:-python3}
"$py" -m pip --version > /dev/null 2>&1 || die "'$py -m pip' is needed to download the CUDA wheels (Debian: apt-get install python3-pip)"

cache=${REPOSNAP_CUDA_CACHE:-$HOME/.cache/reposnap-cuda}
wheels=$cache/wheels
root=$cache/cuda-$CUDA_VERSION
stamp=$root/.reposnap-stamp
want=$(printf '%s\n' "${WHEELS[@]}" | sha256sum | cut -c1-16)

if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  mkdir -p "$wheels"
  req=$(mktemp)
  printf '%s\n' "${WHEELS[@]}" > "$req"
  log "downloading the CUDA wheels into $wheels"
  "$py" -m pip download --no-deps --require-hashes --only-binary=:all: --disable-pip-version-check -q -d "$wheels" -r "$req"
  rm -f "$req"

  log "assembling the CUDA root $root"
  tmp=$root.tmp-$$
  rm -rf "$tmp" && mkdir -p "$tmp"
  for spec in "${WHEELS[@]}"; do
    name=${spec%%==*} version=${spec#*==} version=${version%% *}
    whl=$(ls "$wheels/${name//-/_}-$version-"*.whl 2>/dev/null | head -n 1)
    [ -n "$whl" ] || die "no wheel for $name $version in $wheels"
    "$py" -m zipfile -e "$whl" "$tmp/unpacked"
  done
  chmod -R a+x "$tmp/unpacked/nvidia/cu13/bin" "$tmp/unpacked/nvidia/cu13/nvvm/bin" # zipfile drops the mode bits
  mv "$tmp/unpacked/nvidia/cu13" "$tmp/cuda" && rm -rf "$tmp/unpacked"
  t=$tmp/cuda
  [ -x "$t/bin/nvcc" ] && [ -x "$t/nvvm/bin/cicc" ] && [ -f "$t/include/cuda_runtime.h" ] && [ -d "$t/include/cccl/cub" ] \
    || die "the wheels did not give bin/nvcc, nvvm/bin/cicc, include/cuda_runtime.h and include/cccl/cub"
  ln -s lib "$t/lib64"
  for so in libcudart libcublas libcublasLt; do ln -s "$so.so.13" "$t/lib/$so.so"; done
  # the driver stub: the cu* functions cuda.h declares (both the plain and the _v2 … names)
  mkdir -p "$t/lib/stubs"
  gcc -E -P -I"$t/include" "$t/include/cuda.h" | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | tr -d ' (' | sort -u \
    | sed 's/.*/int &(void) { return 999; }/' > "$t/lib/stubs/libcuda-stub.c"
  [ "$(wc -l < "$t/lib/stubs/libcuda-stub.c")" -gt 100 ] || die "found too few cu* functions in cuda.h for the driver stub"
  gcc -shared -fPIC -w -o "$t/lib/stubs/libcuda.so" -Wl,-soname,libcuda.so.1 "$t/lib/stubs/libcuda-stub.c"
  rm -rf "$root" && mv "$t" "$root" && rm -rf "$tmp"
  echo "$want" > "$stamp"
fi
"$root/bin/nvcc" --version | tail -n 2 | head -n 1 | sed 's/^/[cuda] /'
if [ "$toolkit_only" = 1 ]; then echo "$root"; exit 0; fi

# the toolkit, for both CMake folders (the CPU build ignores it); kept with any REPOSNAP_CMAKE_ARGS given
args=(-DCMAKE_CUDA_COMPILER="$root/bin/nvcc" -DCUDAToolkit_ROOT="$root" -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared)
command -v ccache > /dev/null && args+=(-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
REPOSNAP_CMAKE_ARGS=$(node -e 'console.log(JSON.stringify([...JSON.parse(process.env.REPOSNAP_CMAKE_ARGS || "[]"), ...process.argv.slice(1)]))' -- "${args[@]}")
export REPOSNAP_CMAKE_ARGS

log "building libggml-cuda.so for CMAKE_CUDA_ARCHITECTURES=$arch"
REPOSNAP_GPU=cuda CUDA_ARCH=$arch nice -n 19 node native/build.mjs

out=${REPOSNAP_OUT:-native/build}
mod=$out/gpu/libggml-cuda.so
[ -f "$mod" ] || die "no $mod after the build"
if [ "$bundle" = 1 ]; then
  for so in "${BUNDLE_LIBS[@]}"; do cp -L "$root/lib/$so" "$out/gpu/$so"; done
  log "copied ${BUNDLE_LIBS[*]} into $out/gpu/"
else
  for so in "${BUNDLE_LIBS[@]}"; do rm -f "$out/gpu/$so"; done
fi
log "$mod: $(du -h "$mod" | cut -f1), needs: $(readelf -d "$mod" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
