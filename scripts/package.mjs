#!/usr/bin/env node
// Builds the VSIX of one VS Code platform target, holding that target's engine only:
//
//   npm run package [-- --target linux-x64|linux-arm64|win32-x64|darwin-arm64|darwin-x64] [--out file.vsix]
//
// 1. takes the target's engine: native/build for this machine's own target (npm run build), else
//    native/build-<target> (REPOSNAP_OUT of a cross build: native/cross.sh <target>), or
//    REPOSNAP_ENGINE_DIR; it must hold reposnap.node, engine.json and, for a portable engine, its
//    libraries (and gpu/ modules, when built: REPOSNAP_GPU=vulkan npm run build:native);
// 2. stages it in native/engine/<target>/ (src/engine/native.ts engineDir: a package's engine),
//    removed again once the VSIX is written;
// 3. checks every binary staged with `file` against the target, and fails on one that is not;
// 4. bundles the TypeScript (build.mjs) and runs `vsce package --target <target>` with an ignore
//    file that keeps the other targets' engines and the build folders out;
// 5. checks every .node/.so/.dll/.dylib inside the VSIX again, and prints the package's size
//    (failing over 200 MB: Open VSX takes at most ~256 MB).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isNativeBinary, TARGETS, wrongArchitecture } from './binary-arch.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const MAX_BYTES = 200 * 2 ** 20;

function fail(msg) {
  console.error(`[package] error: ${msg}`);
  process.exit(1);
}

const { values } = parseArgs({ options: { target: { type: 'string' }, out: { type: 'string' } } });
const host = `${process.platform}-${process.arch}`;
const target = values.target ?? host;
if (!TARGETS.includes(target)) fail(`unknown --target '${target}' (${TARGETS.join(', ')})`);
const src = path.resolve(process.env.REPOSNAP_ENGINE_DIR ?? path.join(root, 'native', target === host ? 'build' : `build-${target}`));
const how = target === host ? 'npm run build' : `bash native/cross.sh ${target}`;
if (!fs.existsSync(path.join(src, 'reposnap.node'))) fail(`no ${target} engine in ${src} (reposnap.node is missing): build it with '${how}'`);
if (!fs.existsSync(path.join(src, 'engine.json'))) fail(`${src} has no engine.json: build it with '${how}'`);
const engine = JSON.parse(fs.readFileSync(path.join(src, 'engine.json'), 'utf8'));
if (!engine.portable) fail(`the engine in ${src} was built for one CPU (REPOSNAP_PORTABLE=0): a package needs the portable build ('${how}')`);

// 2. stage: the addon, its libraries, the GPU modules, engine.json; nothing else (no tests, no build trees)
const stage = path.join(root, 'native', 'engine', target);
fs.rmSync(path.join(root, 'native', 'engine'), { recursive: true, force: true });
fs.mkdirSync(stage, { recursive: true });
const staged = [];
for (const f of fs.readdirSync(src)) {
  if (f === 'engine.json' || f === 'reposnap.node' || (/\.(so|dll|dylib)$/.test(f) && !f.includes('.tmp-'))) {
    fs.copyFileSync(path.join(src, f), path.join(stage, f));
    staged.push(path.join(stage, f));
  }
}
const gpus = [];
if (fs.existsSync(path.join(src, 'gpu'))) {
  for (const f of fs.readdirSync(path.join(src, 'gpu')).filter(isNativeBinary)) {
    fs.mkdirSync(path.join(stage, 'gpu'), { recursive: true });
    fs.copyFileSync(path.join(src, 'gpu', f), path.join(stage, 'gpu', f));
    staged.push(path.join(stage, 'gpu', f));
    gpus.push(f);
  }
}
if (!staged.some((f) => /ggml-base\.(so|dll|dylib)$/.test(f))) fail(`${src} has no ggml-base library: rebuild it with '${how}'`);

// 3. every staged binary is the target's
const report = (bad, where) => fail(`${where}: ${bad.length} binar${bad.length === 1 ? 'y is' : 'ies are'} not built for ${target}:\n${bad.map((b) => `  ${path.relative(root, b.file)}: ${b.type}`).join('\n')}`);
let bad = wrongArchitecture(staged.filter((f) => isNativeBinary(f)), target);
if (bad.length > 0) report(bad, 'the staged engine');

// 4. bundle and package, the other targets' engines and the build folders left out
execFileSync(process.execPath, [path.join(root, 'build.mjs')], { cwd: root, stdio: 'inherit' });
const ignore = path.join(os.tmpdir(), `reposnap-vscodeignore-${process.pid}`);
const base = fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8');
// (vsce lets a negated pattern win over every other: the base file must not keep native/build files)
if (/^!native\/build/m.test(base)) fail('.vscodeignore must not re-include native/build files: packages hold native/engine/<target> only');
// npm packages built for another platform (an optional dependency's prebuilt binding, e.g.
// @reflink/reflink-linux-x64-gnu on a Linux host packing win32-x64): their package.json os/cpu say so
const [targetOs, targetCpu] = target.split('-');
const foreign = [];
const nm = path.join(root, 'node_modules');
for (const d of fs.readdirSync(nm).flatMap((d) => (d.startsWith('@') ? fs.readdirSync(path.join(nm, d)).map((s) => `${d}/${s}`) : [d]))) {
  let pj;
  try {
    pj = JSON.parse(fs.readFileSync(path.join(nm, d, 'package.json'), 'utf8'));
  } catch {
    continue;
  }
  const allows = (list, v) => !Array.isArray(list) || list.length === 0 || (list.some((x) => !x.startsWith('!')) ? list.includes(v) : !list.includes(`!${v}`));
  if (!allows(pj.os, targetOs) || !allows(pj.cpu, targetCpu)) foreign.push(`node_modules/${d}/**`);
}
fs.writeFileSync(ignore, `${base}\n# scripts/package.mjs: this package's engine is native/engine/${target} only\nnative/build/**\nnative/build-*/**\nnative/cross/**\n${foreign.join('\n')}\n`);
const out = path.resolve(values.out ?? path.join(root, `reposnap-${target}.vsix`));
try {
  execFileSync(process.execPath, [path.join(root, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--target', target, '--ignoreFile', ignore, '--skip-license', '--out', out], { cwd: root, stdio: 'inherit' });
} finally {
  fs.rmSync(ignore, { force: true });
  // the staged engine is only for vsce: left in the checkout, engineDir() would load it instead of
  // native/build (a stale engine after the next build)
  fs.rmSync(path.join(root, 'native', 'engine'), { recursive: true, force: true });
}

// 5. the VSIX itself: every native binary in it is the target's, and it is not too large
const listing = execFileSync('unzip', ['-Z1', out], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 }).split('\n').filter(Boolean);
const binaries = listing.filter(isNativeBinary);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-vsix-'));
try {
  if (binaries.length > 0) execFileSync('unzip', ['-q', out, ...binaries, '-d', tmp]);
  bad = wrongArchitecture(binaries.map((b) => path.join(tmp, b)), target);
  if (bad.length > 0) report(bad.map((b) => ({ ...b, file: path.relative(tmp, b.file) })), path.basename(out));
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
const other = listing.filter((f) => f.startsWith('extension/native/') && !f.startsWith(`extension/native/engine/${target}/`));
if (other.length > 0) fail(`${path.basename(out)} holds files of other engines: ${other.slice(0, 5).join(', ')}`);
const size = fs.statSync(out).size;
console.log(`[package] ${path.relative(process.cwd(), out)}: ${target}, ${(size / 2 ** 20).toFixed(1)} MiB, ${listing.length} files, ${binaries.length} native binaries checked with file (${gpus.length ? `GPU: ${gpus.join(', ')}` : 'no GPU backend'})`);
if (size > MAX_BYTES) fail(`${path.basename(out)} is ${(size / 2 ** 20).toFixed(1)} MiB, over ${MAX_BYTES / 2 ** 20} MiB (Open VSX takes at most ~256 MB)`);
