#!/usr/bin/env bash
# Cross-builds the engine for another VS Code target: runs native/cross/<target>.sh (its own
# documentation is at its top), which writes native/build-<target> for `npm run package -- --target <target>`.
#   bash native/cross.sh linux-arm64 [--smoke]
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)/cross"
target=${1:-}
if [ -z "$target" ] || [ ! -f "$dir/$target.sh" ]; then
  echo "usage: bash native/cross.sh <target> [args…]; targets: $(cd "$dir" && ls *.sh 2>/dev/null | sed 's/\.sh$//' | tr '\n' ' ')" >&2
  exit 2
fi
shift
exec bash "$dir/$target.sh" "$@"
