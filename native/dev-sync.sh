#!/usr/bin/env bash
# Developer helper: export the SnapKV patch series from a llama.cpp dev tree (native/patches/*.patch).
#
# The series is the dev tree's commits on top of the llama.cpp commit that node-llama-cpp's bundle
# holds, one patch per commit (git format-patch), in order:
#   0001 window query capture in build_attn   0002 scoring graph
#   0003 compaction with per-head visibility  0004 public llama_snapkv_* API
#
# Edit the series in a dev tree (default: native/build/llama.cpp, the engine's own build tree, a
# git clone of the bundle), as commits: `git commit --fixup=<commit>` + `git rebase -i --autosquash
# <base>` to change one patch, a new commit to add one. Then run
#   native/dev-sync.sh [dev tree]
# which (1) refuses a dirty dev tree (uncommitted work would be missing from the series), (2)
# rewrites native/patches/*.patch from <base>..HEAD, (3) for another dev tree, checks its HEAD out
# into native/build/llama.cpp file by file (unchanged files keep their mtimes: only the changed
# ones recompile), and (4) stamps the build tree as up to date, so that `node native/build.mjs`
# builds it as it is instead of re-cloning and re-applying the series.
# The first time: `git -C native/build/llama.cpp reset -q --hard && for p in native/patches/*.patch;
# do git -C native/build/llama.cpp am -q "$PWD/$p"; done` turns an applied series into commits.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dst="$root/native/build/llama.cpp"
src=$(cd "${1:-$dst}" && pwd)
bundle="$root/node_modules/node-llama-cpp/llama/gitRelease.bundle"
base=$(git bundle list-heads "$bundle" | awk 'NR == 1 { print $1 }')

[ -n "$base" ] || { echo "dev-sync: cannot read the llama.cpp commit of $bundle (run npm install)" >&2; exit 1; }
git -C "$src" merge-base --is-ancestor "$base" HEAD ||
    { echo "dev-sync: $src is not based on the bundle's commit $base" >&2; exit 1; }
if [ -n "$(git -C "$src" status --porcelain)" ]; then
    echo "dev-sync: $src has uncommitted changes: commit them (one commit per patch) first" >&2
    exit 1
fi
[ "$(git -C "$src" rev-list --count "$base"..HEAD)" -gt 0 ] || { echo "dev-sync: no commits on top of $base in $src" >&2; exit 1; }

# one patch per commit; --zero-commit and no signature keep the files stable across re-exports
rm -f "$root"/native/patches/*.patch
git -C "$src" format-patch -q --zero-commit --no-signature --no-stat -o "$root/native/patches" "$base"..HEAD
ls "$root"/native/patches/*.patch

if [ "$src" != "$dst" ]; then
    [ -d "$dst/.git" ] || git -c advice.detachedHead=false clone -q "$bundle" "$dst"
    git -C "$dst" reset -q --hard "$base"
    git -C "$dst" clean -q -fdx
    git -C "$src" diff --name-only "$base" HEAD | while read -r f; do
        if [ -e "$src/$f" ]; then
            mkdir -p "$(dirname "$dst/$f")"
            cmp -s "$src/$f" "$dst/$f" || cp "$src/$f" "$dst/$f"
        else
            rm -f "$dst/$f"
        fi
    done
fi

# the stamp native/build.mjs computes from the bundle's tag and the series
node -e '
const c=require("crypto"),fs=require("fs"),p=require("path");
const root=process.argv[1];const nl=p.join(root,"node_modules/node-llama-cpp/llama");
const {tag}=JSON.parse(fs.readFileSync(p.join(nl,"llama.cpp.info.json"),"utf8"));
const h=c.createHash("sha256").update(tag);const pd=p.join(root,"native/patches");
for(const f of fs.readdirSync(pd).filter(f=>f.endsWith(".patch")).sort()){h.update(f).update(fs.readFileSync(p.join(pd,f)));}
fs.writeFileSync(p.join(root,"native/build/llama.cpp.stamp"),h.digest("hex"));' "$root"
