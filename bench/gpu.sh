#!/usr/bin/env bash
# bench/gpu.sh — SnapKV on an NVIDIA GPU, for a machine with no network.
#
# Here (with node_modules and the engine built):   bash bench/gpu.sh --prepare
#   packs the patched llama.cpp source (without .git, tests, tools, examples) into
#   .device/llama-src.tar.gz (~6 MB; .device/ is git-ignored, carry it to the GPU box).
# There (CUDA toolkit, cmake, ninja; no Node.js needed):   bash bench/gpu.sh
#   builds llama.cpp with CUDA for the card it finds (its compute capability only) and the C++
#   benchmark native/bench/snapkv-bench.cpp, creates an 8B-shaped synthetic model in memory
#   (32 layers, n_embd 4096, 32/8 heads, n_ff 14336, q4_0 weights) and runs L = 32K and 128K:
#   prefill tok/s, decode ms/token uncompressed and at B = 2048/1024/256, snap ms, the key-norm
#   graph's ms over the L cells (llama_snapkv_key_norms, patch 0007: the key-norm scorers' input), KV bytes.
# Environment: LENGTHS (default 32768,131072), MODEL_ARGS (override the shape), JOBS (default nproc),
#   OUT (folder for the log, default .device), BANDWIDTH (the card's memory bandwidth in GB/s for the
#   floor column; default from the card's name: H200 4800, H100 SXM 3350, H100 PCIe 2000, A100 2039).
# On the device tool: carry [".device"], command `OUT=$OUT bash bench/gpu.sh`, timeout_s 600.
# Prebuilt instead (no build on the GPU machine): here, after `bash native/cuda/build.sh` (CUDA 13, sm_90),
#   CUDA_MODULE=native/build/gpu/libggml-cuda.so bash bench/gpu.sh --prepare
# also builds snapkv-bench against the portable engine (native/build/cmake) and copies it, libllama,
# libggml, libggml-base, the CPU variants and that module into .device/engine/ (check the size
# against the device tool's 64 MiB carry). There, bash bench/gpu.sh runs .device/engine/snapkv-bench
# when .device/engine/ exists (BUILD=1: build as before). The module needs driver >= 580 and
# libcudart.so.13 + libcublas.so.13 on the loader's path (a CUDA 13 install; CUDA_LIB_DIRS=DIR:…,
# /usr/local/cuda*/lib64 and pip's nvidia/cu13/lib are tried): it stops with the reason when they are missing.
# Here, a dry run of the whole table on the CPU engine already built (tiny shape, ~1 min):
#   bash bench/gpu.sh --dry-run
# builds snapkv-bench beside the addon's libraries (native/build/cmake/bin, links the same libllama) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

# A node budget (LLAMA_SNAPKV_MAX_NODES) under which the SnapKV graph of N layers still runs as one
# graph but with every KV head of a layer in one scoring chunk: one chunk's graph takes 39 nodes and
# leafs a layer (F16 cache, flash attention on, kernel 7: test/engine/graph-budget.test.ts counts
# them) and 3 shared, two chunks 52 a layer; the engine picks the fewest heads per chunk that fit.
# Beside the default rows (one KV head a chunk) it shows what chunking costs or saves in snap ms and
# peak device memory.
one_chunk_nodes() { echo $(( 39 * $1 + 3 + 8 )); }

if [ "${1:-}" = "--dry-run" ]; then
  [ -f native/build/cmake/CMakeCache.txt ] || { echo "build the engine first (npm run build:native)" >&2; exit 1; }
  cmake --build native/build/cmake --target snapkv-bench --parallel "${JOBS:-$(nproc)}" > /dev/null
  native/build/cmake/bin/snapkv-bench --layers 4 --embd 256 --heads 4 --kv-heads 2 --ff 512 --vocab 1000 --wtype q4_0 \
    --kv f16 --fa 1 --ngl 0 --lengths "${LENGTHS:-2048}" --budgets 1024,256 --decode 4 --ubatch 256 --bandwidth "${BANDWIDTH:-50}"
  echo "every KV head of a layer in one scoring chunk (LLAMA_SNAPKV_MAX_NODES=$(one_chunk_nodes 4)):"
  LLAMA_SNAPKV_MAX_NODES=$(one_chunk_nodes 4) native/build/cmake/bin/snapkv-bench --layers 4 --embd 256 --heads 4 --kv-heads 2 --ff 512 --vocab 1000 --wtype q4_0 \
    --kv f16 --fa 1 --ngl 0 --lengths "${LENGTHS:-2048}" --budgets 1024 --decode 4 --ubatch 256 | tail -n 1
  exit 0
fi

if [ "${1:-}" = "--prepare" ]; then
  [ -d native/build/llama.cpp/src ] || { echo "build the engine first (npm run build:native)" >&2; exit 1; }
  mkdir -p .device
  tar czf .device/llama-src.tar.gz -C native/build \
    --exclude=llama.cpp/.git --exclude=llama.cpp/tests --exclude=llama.cpp/tools --exclude=llama.cpp/examples \
    --exclude=llama.cpp/docs --exclude=llama.cpp/models --exclude=llama.cpp/gguf-py --exclude=llama.cpp/media \
    --exclude=llama.cpp/scripts --exclude=llama.cpp/benches --exclude=llama.cpp/grammars --exclude=llama.cpp/requirements \
    llama.cpp
  ls -la .device/llama-src.tar.gz
  if [ -n "${CUDA_MODULE:-}" ]; then
    [ -f "$CUDA_MODULE" ] || { echo "CUDA_MODULE=$CUDA_MODULE: no such file (bash native/cuda/build.sh builds one)" >&2; exit 1; }
    [ -f native/build/cmake/CMakeCache.txt ] || { echo "build the engine first (npm run build:native)" >&2; exit 1; }
    cmake --build native/build/cmake --target snapkv-bench --parallel "${JOBS:-$(nproc)}" > /dev/null
    rm -rf .device/engine && mkdir -p .device/engine
    cp native/build/cmake/bin/snapkv-bench native/build/cmake/bin/libllama.so native/build/cmake/bin/libggml.so \
      native/build/cmake/bin/libggml-base.so native/build/cmake/bin/libggml-cpu-*.so .device/engine/
    cp "$CUDA_MODULE" .device/engine/libggml-cuda.so
    du -sh .device/engine
  else
    rm -rf .device/engine
  fi
  exit 0
fi

out=${OUT:-.device}
mkdir -p "$out"
work=${WORK:-/tmp/reposnap-gpu}
jobs=${JOBS:-$(nproc)}
[ -f .device/llama-src.tar.gz ] || { echo "missing .device/llama-src.tar.gz: run 'bash bench/gpu.sh --prepare' where the engine is built" >&2; exit 1; }
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '. ')
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
case "$name" in
  *H200*) bw=4800 ;; *H100*PCIe*) bw=2000 ;; *H100*) bw=3350 ;; *A100*) bw=2039 ;; *) bw=0 ;;
esac
bw=${BANDWIDTH:-$bw}

t0=$(date +%s)
if [ -x .device/engine/snapkv-bench ] && [ "${BUILD:-0}" != 1 ]; then
  # the prebuilt engine (--prepare with CUDA_MODULE): find the CUDA 13 runtime the module needs
  mod=.device/engine/libggml-cuda.so
  missing() { ldd "$mod" | grep 'not found' || true; }
  CUDA_LIB_DIRS=${CUDA_LIB_DIRS:-}
  for d in ${CUDA_LIB_DIRS//:/ } /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    [ -z "$(missing)" ] && break
    [ -d "$d/nvidia/cu13/lib" ] && d=$d/nvidia/cu13/lib
    [ -f "$d/libcublas.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  if [ -n "$(missing)" ]; then
    echo "the prebuilt $mod cannot be loaded here (driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1); CUDA 13 needs >= 580):" >&2
    missing >&2
    echo "run with BUILD=1 to build llama.cpp with this machine's CUDA toolkit instead" >&2
    exit 1
  fi
  rm -rf "$work/build" && mkdir -p "$work/build" && cp .device/engine/* "$work/build/"
  echo "prebuilt engine: $(ldd "$mod" | grep -E 'libcudart|libcublas' | tr -s ' \t' ' ')"
  # ggml skips a backend module it cannot load: make sure this one is, before the long rows run on the CPU
  "$work/build/snapkv-bench" --layers 2 --embd 256 --heads 4 --kv-heads 2 --ff 512 --vocab 1000 --wtype q4_0 --kv f16 --fa 1 --ngl 999 \
    --lengths 256 --budgets 128 --decode 2 --ubatch 256 > "$out/prebuilt-check.log" 2>&1 || true
  grep -q 'CUDA' "$out/prebuilt-check.log" || { echo "the prebuilt CUDA module did not load (see $out/prebuilt-check.log):" >&2; tail -n 20 "$out/prebuilt-check.log" >&2; exit 1; }
elif [ ! -x "$work/build/snapkv-bench" ] || [ -f "$work/build/libggml-cuda.so" ]; then
  rm -rf "$work" && mkdir -p "$work"
  tar xzf .device/llama-src.tar.gz -C "$work"
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S native -B "$work/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DLLAMA_SRC="$work/llama.cpp" \
    -DREPOSNAP_ADDON=OFF -DREPOSNAP_PORTABLE=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$cap" -DGGML_NATIVE=ON -DGGML_CCACHE=OFF > "$out/cmake.log"
  cmake --build "$work/build" --target snapkv-bench --parallel "$jobs" > "$out/build.log" 2>&1 || { tail -n 40 "$out/build.log"; exit 1; }
fi
echo "build: $(( $(date +%s) - t0 )) s (sm_$cap, $jobs jobs)"

"$work/build/snapkv-bench" ${MODEL_ARGS:---layers 32 --embd 4096 --heads 32 --kv-heads 8 --ff 14336 --vocab 32000 --wtype q4_0} \
  --kv f16 --fa 1 --ngl 999 --lengths "${LENGTHS:-32768,131072}" --budgets 2048,1024,256 --decode 16 --ubatch 512 --bandwidth "$bw" | tee "$out/gpu-bench.md"
layers=$(echo "${MODEL_ARGS:---layers 32}" | sed -n 's/.*--layers \([0-9]*\).*/\1/p')
echo "every KV head of a layer in one scoring chunk (LLAMA_SNAPKV_MAX_NODES=$(one_chunk_nodes "${layers:-32}")), L = 32768:" | tee -a "$out/gpu-bench.md"
LLAMA_SNAPKV_MAX_NODES=$(one_chunk_nodes "${layers:-32}") "$work/build/snapkv-bench" ${MODEL_ARGS:---layers 32 --embd 4096 --heads 32 --kv-heads 8 --ff 14336 --vocab 32000 --wtype q4_0} \
  --kv f16 --fa 1 --ngl 999 --lengths 32768 --budgets 1024 --decode 16 --ubatch 512 --bandwidth "$bw" | tail -n 1 | tee -a "$out/gpu-bench.md"
echo "total: $(( $(date +%s) - t0 )) s"
