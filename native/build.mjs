#!/usr/bin/env node
// Builds the RepoSnap engine offline:
//   1. clones llama.cpp from the git bundle that node-llama-cpp ships (no network),
//   2. applies native/patches/*.patch in name order (the SnapKV series: 0001 window capture,
//      0002 scoring, 0003 compaction, 0004 public API; native/dev-sync.sh exports it),
//   3. configures and builds llama.cpp (static) + the N-API addon with CMake.
// The clone is redone only when the bundle tag or the patch series changes, so an
// addon-only change rebuilds only the addon.
//
// Options (environment):
//   REPOSNAP_GPU=cuda|vulkan|metal   build a GPU backend in addition to the CPU (default: CPU only)
//   REPOSNAP_BUILD_TYPE=Release|RelWithDebInfo|Debug   (default Release)
//   REPOSNAP_JOBS=N                  parallel compile jobs (default: number of cores)
// llama.cpp's RPC backend (GGML_RPC) is always built in: `reposnap rpc-server` and `--rpc`.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const nativeDir = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(nativeDir);
const buildDir = path.join(nativeDir, 'build');
const srcDir = path.join(buildDir, 'llama.cpp');
const gpu = (process.env.REPOSNAP_GPU ?? 'cpu').toLowerCase();
const cmakeDir = path.join(buildDir, gpu === 'cpu' ? 'cmake' : `cmake-${gpu}`);
const buildType = process.env.REPOSNAP_BUILD_TYPE ?? 'Release';
const jobs = process.env.REPOSNAP_JOBS ?? String(os.availableParallelism?.() ?? os.cpus().length);

function run(cmd, args, opts = {}) {
  console.log(`[native] ${cmd} ${args.join(' ')}`);
  execFileSync(cmd, args, { stdio: 'inherit', ...opts });
}

function fail(msg) {
  console.error(`[native] error: ${msg}`);
  process.exit(1);
}

function has(cmd) {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

for (const tool of ['git', 'cmake']) {
  if (!has(tool)) fail(`'${tool}' is required to build the engine (Debian: apt-get install ${tool})`);
}

const nlcDir = path.join(root, 'node_modules', 'node-llama-cpp', 'llama');
const bundle = path.join(nlcDir, 'gitRelease.bundle');
if (!fs.existsSync(bundle)) fail(`missing ${bundle}: run 'npm install' first`);
const { tag } = JSON.parse(fs.readFileSync(path.join(nlcDir, 'llama.cpp.info.json'), 'utf8'));

const patchDir = path.join(nativeDir, 'patches');
const patches = fs.readdirSync(patchDir).filter((f) => f.endsWith('.patch')).sort();
const hash = createHash('sha256').update(tag);
for (const p of patches) hash.update(p).update(fs.readFileSync(path.join(patchDir, p)));
const stamp = hash.digest('hex');
const stampFile = path.join(buildDir, 'llama.cpp.stamp');

fs.mkdirSync(buildDir, { recursive: true });
const current = fs.existsSync(stampFile) ? fs.readFileSync(stampFile, 'utf8') : '';
if (current !== stamp || !fs.existsSync(srcDir)) {
  // keep the files' mtimes stable for unchanged sources: reset the existing clone
  // instead of deleting it, so CMake/ccache rebuild only what the patches touch. Reset to the
  // bundle's commit, not HEAD: a dev tree holds the series as commits (native/dev-sync.sh)
  if (fs.existsSync(path.join(srcDir, '.git'))) {
    const base = execFileSync('git', ['bundle', 'list-heads', bundle], { encoding: 'utf8' }).split(/\s/)[0];
    run('git', ['-C', srcDir, 'reset', '-q', '--hard', base]);
    run('git', ['-C', srcDir, 'clean', '-q', '-fdx']);
  } else {
    fs.rmSync(srcDir, { recursive: true, force: true });
    run('git', ['-c', 'advice.detachedHead=false', 'clone', '-q', bundle, srcDir]);
  }
  for (const p of patches) {
    run('git', ['-C', srcDir, 'apply', '--whitespace=nowarn', path.join(patchDir, p)]);
  }
  fs.writeFileSync(stampFile, stamp);
}

function nodeInclude() {
  const candidates = [
    process.env.npm_config_nodedir && path.join(process.env.npm_config_nodedir, 'include', 'node'),
    path.resolve(path.dirname(process.execPath), '..', 'include', 'node'),
    '/usr/include/node',
    '/usr/local/include/node',
  ].filter(Boolean);
  const found = candidates.find((d) => fs.existsSync(path.join(d, 'node_api.h')));
  if (!found) fail(`Node.js headers (node_api.h) not found in: ${candidates.join(', ')}`);
  return found;
}

const napiDir = path.join(root, 'node_modules', 'node-addon-api');
if (!fs.existsSync(path.join(napiDir, 'napi.h'))) fail(`missing node-addon-api: run 'npm install' first`);

/**
 * ggml's x86-64 instruction-set options for the CPU of this machine, spelled out the way ggml
 * builds its CPU variants (GGML_CPU_ALL_VARIANTS; node-llama-cpp's prebuilt binaries load the
 * variant that fits, e.g. zen4), instead of GGML_NATIVE's -march=native. Measured here (gcc 12,
 * AMD Zen 5, 2 vCPUs, 8x1024 synthetic model, L = 16K, flash attention): prefill 285-291 tok/s
 * with -march=native, 359-411 with these options, node-llama-cpp's zen4 variant 305-339 in the
 * same runs. REPOSNAP_NATIVE=1 keeps -march=native. Off x86-64 Linux: ggml's defaults.
 * @returns cmake -D options ([] where the CPU cannot be read).
 */
function cpuIsaDefs() {
  if (process.env.REPOSNAP_NATIVE === '1') return ['-DGGML_NATIVE=ON'];
  if (process.platform !== 'linux' || process.arch !== 'x64') return [];
  let flags;
  try {
    flags = new Set(/^flags\s*:\s*(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))[1].split(/\s+/));
  } catch {
    return [];
  }
  const cpu = (...f) => f.every((x) => flags.has(x));
  const on = (name, ok) => (ok ? [`-DGGML_${name}=ON`] : []);
  const avx512 = cpu('avx512f', 'avx512cd', 'avx512vl', 'avx512dq', 'avx512bw');
  return [
    '-DGGML_NATIVE=OFF',
    ...on('SSE42', cpu('sse4_2')),
    ...on('AVX', cpu('avx')),
    ...on('AVX2', cpu('avx2')),
    ...on('BMI2', cpu('bmi2')),
    ...on('FMA', cpu('fma')),
    ...on('F16C', cpu('f16c')),
    ...on('AVX_VNNI', !avx512 && cpu('avx_vnni')),
    ...on('AVX512', avx512),
    ...on('AVX512_VBMI', avx512 && cpu('avx512vbmi')),
    ...on('AVX512_VNNI', avx512 && cpu('avx512_vnni')),
    ...on('AVX512_BF16', avx512 && cpu('avx512_bf16')),
    ...on('AMX_TILE', cpu('amx_tile')),
    ...on('AMX_INT8', cpu('amx_int8')),
    ...on('AMX_BF16', cpu('amx_bf16')),
  ];
}

const defs = [
  `-DCMAKE_BUILD_TYPE=${buildType}`,
  `-DLLAMA_SRC=${srcDir}`,
  `-DNODE_INCLUDE_DIR=${nodeInclude()}`,
  `-DNODE_ADDON_API_DIR=${napiDir}`,
  ...cpuIsaDefs(),
  // llama.cpp's RPC backend, always built in: any engine can put layers on `reposnap rpc-server`s
  // (model loading's rpcServers) and serve its own CPU backend as one (startRpcServer)
  // (TCP only: RDMA, which ggml turns on where it finds libibverbs, would tie the addon to that library)
  '-DGGML_RPC=ON',
  '-DGGML_RPC_RDMA=OFF',
];
if (has('ccache')) defs.push('-DGGML_CCACHE=ON', '-DCMAKE_C_COMPILER_LAUNCHER=ccache', '-DCMAKE_CXX_COMPILER_LAUNCHER=ccache');
else defs.push('-DGGML_CCACHE=OFF');
if (gpu === 'cuda') defs.push('-DGGML_CUDA=ON', `-DCMAKE_CUDA_ARCHITECTURES=${process.env.CUDA_ARCH ?? 'native'}`);
else if (gpu === 'vulkan') defs.push('-DGGML_VULKAN=ON');
else if (gpu === 'metal') defs.push('-DGGML_METAL=ON');
else if (gpu !== 'cpu') fail(`unknown REPOSNAP_GPU='${gpu}' (cpu, cuda, vulkan, metal)`);

run('cmake', ['-S', nativeDir, '-B', cmakeDir, ...defs], { stdio: ['ignore', 'ignore', 'inherit'] });
// relative paths in ccache's hashes: a clone in another folder (CI) reuses the cache
// the addon, and the patch series' own C++ test (native/test; run by test/engine/native-compact.test.ts)
run('cmake', ['--build', cmakeDir, '--target', 'reposnap', 'snapkv-compact-test', '--parallel', jobs], {
  env: { ...process.env, CCACHE_BASEDIR: root, CCACHE_NOHASHDIR: 'true' },
});

// the engine's identity: state files record it and refuse to load across engine changes
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
fs.writeFileSync(path.join(buildDir, 'engine.json'), JSON.stringify({ version: `${pkg.version}+${stamp.slice(0, 12)}`, llamaCpp: tag, patches }, null, 2) + '\n');

const out = path.join(buildDir, gpu === 'cpu' ? 'reposnap.node' : `reposnap-${gpu}.node`);
// copy, then rename into place: a process that has the old engine loaded keeps its mapping
// (copying over the file in place would change the pages under it)
fs.copyFileSync(path.join(cmakeDir, 'reposnap.node'), `${out}.tmp-${process.pid}`);
fs.renameSync(`${out}.tmp-${process.pid}`, out);
const testExe = path.join(buildDir, gpu === 'cpu' ? 'snapkv-compact-test' : `snapkv-compact-test-${gpu}`);
fs.copyFileSync(path.join(cmakeDir, 'snapkv-compact-test'), `${testExe}.tmp-${process.pid}`);
fs.renameSync(`${testExe}.tmp-${process.pid}`, testExe);
console.log(`[native] built ${path.relative(root, out)}`);
