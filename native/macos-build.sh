#!/usr/bin/env bash
# Builds RepoSnap's darwin-arm64 or darwin-x64 package ON A MAC (documented; not tested by this
# project's CI, which has no Mac):
#
#   bash native/macos-build.sh            # this Mac's architecture: darwin-arm64 or darwin-x64
#
# Needs: Xcode's command line tools (xcode-select --install: clang, the Metal compiler), cmake and
# git (Homebrew: brew install cmake), Node.js >= 20 with npm. Steps:
#   1. npm ci;
#   2. REPOSNAP_GPU=metal node native/build.mjs: the portable engine (shared libllama/ggml beside
#      reposnap.node, its CPU variants: apple_m1, apple_m2_m3, apple_m4 on arm64, the x86-64 levels
#      on Intel; chosen at run time) and the Metal backend as native/build/gpu/libggml-metal.so
#      (shaders embedded: GGML_METAL_EMBED_LIBRARY);
#   3. npm run package -- --target darwin-<arch>: stages the engine, checks every binary with `file`
#      (Mach-O 64-bit arm64 / x86_64) and writes reposnap-darwin-<arch>.vsix.
# Then check it: node bin/reposnap.js ask --verbose --model <file.gguf> "…" names the CPU variant
# and "GPU MTL0: …".
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(uname -s)" = Darwin ] || { echo "macos-build: run this on a Mac (uname -s is $(uname -s))" >&2; exit 1; }
case "$(uname -m)" in
  arm64) target=darwin-arm64 ;;
  x86_64) target=darwin-x64 ;;
  *) echo "macos-build: unknown architecture $(uname -m)" >&2; exit 1 ;;
esac
for tool in cmake git node npm; do
  command -v "$tool" >/dev/null || { echo "macos-build: '$tool' is missing (brew install $tool; Node.js from nodejs.org)" >&2; exit 1; }
done
xcrun -f metal >/dev/null 2>&1 || echo "macos-build: warning: Xcode's metal compiler was not found; the Metal backend embeds its shader source instead" >&2
npm ci --no-audit --no-fund
REPOSNAP_GPU=metal node native/build.mjs
npm run package -- --target "$target"
