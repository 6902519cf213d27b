#!/usr/bin/env bash
# Developer helper: regenerate native/patches/0001-snapkv.patch from a working llama.cpp tree
# ($1, default /tmp/lc/llama.cpp), copy the changed files into native/build/llama.cpp without
# touching unchanged ones (so only they recompile), and mark the build tree as up to date.
set -euo pipefail
src=${1:-/tmp/lc/llama.cpp}
root=$(cd "$(dirname "$0")/.." && pwd)
dst="$root/native/build/llama.cpp"
( cd "$src" && git add -N . && git diff ) > "$root/native/patches/0001-snapkv.patch"
( cd "$src" && git diff --name-only ) | while read -r f; do
  cmp -s "$src/$f" "$dst/$f" || cp "$src/$f" "$dst/$f"
done
node -e '
const c=require("crypto"),fs=require("fs"),p=require("path");
const root=process.argv[1];const nl=p.join(root,"node_modules/node-llama-cpp/llama");
const {tag}=JSON.parse(fs.readFileSync(p.join(nl,"llama.cpp.info.json"),"utf8"));
const h=c.createHash("sha256").update(tag);const pd=p.join(root,"native/patches");
for(const f of fs.readdirSync(pd).filter(f=>f.endsWith(".patch")).sort()){h.update(f).update(fs.readFileSync(p.join(pd,f)));}
fs.writeFileSync(p.join(root,"native/build/llama.cpp.stamp"),h.digest("hex"));' "$root"
