# Sourced by the emulated smoke tests (.ci/qemu-cpu.sh, native/cross/linux-arm64.sh): writes a
# repository of two small files (a few hundred tokens of prompt on the tiny model) into a new
# temporary folder, $REPO, and makes a temporary cache folder, $SMOKE_CACHE; both go on exit.
REPO=$(mktemp -d)
SMOKE_CACHE=$(mktemp -d)
trap 'rm -rf "$REPO" "$SMOKE_CACHE"' EXIT
cat >"$REPO/math.py" <<'PY'
def add(a, b):
    """Return the sum of a and b."""
    return a + b
PY
cat >"$REPO/README.md" <<'MD'
# math
`add(a, b)` adds two numbers.
MD
