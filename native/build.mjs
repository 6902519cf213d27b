#!/usr/bin/env node
// Builds the RepoSnap engine offline:
//   1. clones llama.cpp from the git bundle that node-llama-cpp ships (no network),
//   2. applies native/patches/*.patch in name order (the SnapKV series: 0001 window capture,
//      0002 scoring, 0003 compaction, 0004 public API, …; native/dev-sync.sh exports it),
//   3. configures and builds llama.cpp + the N-API addon with CMake.
// The clone is redone only when the bundle tag or the patch series changes, so an
// addon-only change rebuilds only the addon.
//
// The default build is portable: libllama and ggml are shared libraries beside the addon, and every
// ggml backend is a module loaded at run time (GGML_BACKEND_DL): one CPU backend per instruction-set
// level (GGML_CPU_ALL_VARIANTS: libggml-cpu-x64 … -haswell … -zen4 on x86-64), of which ggml loads
// the best one the CPU supports, so the engine runs on any CPU of its architecture. Output
// (native/build, or REPOSNAP_OUT): reposnap.node, libllama, libggml, libggml-base, libggml-cpu-*,
// libggml-rpc (.so / .dll / .dylib), snapkv-compact-test, engine.json.
//
// Options (environment):
//   REPOSNAP_GPU=cuda|vulkan|metal   also build that GPU backend as one more module
//                                    (gpu/libggml-<gpu>.so beside the addon; the CPU build comes first;
//                                    CUDA without a toolkit installed: bash native/cuda/build.sh)
//   REPOSNAP_PORTABLE=0              a static addon for this machine's CPU only (the instruction
//                                    sets /proc/cpuinfo lists; REPOSNAP_NATIVE=1: -march=native),
//                                    written as reposnap.node (+ reposnap-<gpu>.node) as before
//   REPOSNAP_OUT=DIR                 where the engine files go (default native/build; a cross build:
//                                    native/build-<REPOSNAP_TARGET>)
//   REPOSNAP_TARGET=<platform-arch>  a cross build for that VS Code target (linux-arm64, win32-x64, …):
//                                    its own CMake folders (native/build/cmake-<target>…); the
//                                    toolchain comes from REPOSNAP_CMAKE_ARGS (native/cross/*.sh)
//   REPOSNAP_CMAKE_ARGS='["-D…", …]' extra CMake configure arguments (a JSON array), e.g. a toolchain file
//   REPOSNAP_NODE_INCLUDE=DIR        Node.js headers (node_api.h) to build the addon against
//   REPOSNAP_BUILD_TYPE=Release|RelWithDebInfo|Debug   (default Release)
//   REPOSNAP_JOBS=N                  parallel compile jobs (default: number of cores)
// llama.cpp's RPC backend (GGML_RPC) is always built: `reposnap rpc-server` and `--rpc`.
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
const portable = process.env.REPOSNAP_PORTABLE !== '0' && process.env.REPOSNAP_NATIVE !== '1';
const hostTarget = `${process.platform}-${process.arch}`;
const target = process.env.REPOSNAP_TARGET ?? hostTarget;
const cross = target !== hostTarget;
const outDir = path.resolve(process.env.REPOSNAP_OUT ?? (cross ? path.join(nativeDir, `build-${target}`) : buildDir));
/** The CMake build folder of a configuration (`cmake`, `cmake-vulkan`, …), per target for a cross build. */
const cmakeFolder = (name) => path.join(buildDir, cross ? `${name}-${target}` : name);
let extraCmakeArgs = [];
try {
  extraCmakeArgs = JSON.parse(process.env.REPOSNAP_CMAKE_ARGS ?? '[]');
  if (!Array.isArray(extraCmakeArgs) || !extraCmakeArgs.every((a) => typeof a === 'string')) throw new Error('not an array of strings');
} catch (e) {
  fail(`REPOSNAP_CMAKE_ARGS must be a JSON array of strings (${e.message})`);
}
if (cross && extraCmakeArgs.length === 0) fail(`REPOSNAP_TARGET=${target} is a cross build: give its toolchain in REPOSNAP_CMAKE_ARGS (see native/cross/)`);
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
  if (process.env.REPOSNAP_NODE_INCLUDE) return process.env.REPOSNAP_NODE_INCLUDE;
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
  if (portable) return []; // GGML_CPU_ALL_VARIANTS (native/CMakeLists.txt)
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
  `-DREPOSNAP_PORTABLE=${portable ? 'ON' : 'OFF'}`,
  ...cpuIsaDefs(),
  // llama.cpp's RPC backend, always built: any engine can put layers on `reposnap rpc-server`s
  // (model loading's rpcServers) and serve its own CPU backend as one (startRpcServer)
  // (TCP only: RDMA, which ggml turns on where it finds libibverbs, would tie the engine to that library)
  '-DGGML_RPC=ON',
  '-DGGML_RPC_RDMA=OFF',
];
if (has('ccache')) defs.push('-DGGML_CCACHE=ON', '-DCMAKE_C_COMPILER_LAUNCHER=ccache', '-DCMAKE_CXX_COMPILER_LAUNCHER=ccache');
else defs.push('-DGGML_CCACHE=OFF');
if (!['cpu', 'cuda', 'vulkan', 'metal'].includes(gpu)) fail(`unknown REPOSNAP_GPU='${gpu}' (cpu, cuda, vulkan, metal)`);

/** The -D options that turn on one GPU backend. */
function gpuDefs(g) {
  if (g === 'cuda') return ['-DGGML_CUDA=ON', `-DCMAKE_CUDA_ARCHITECTURES=${process.env.CUDA_ARCH ?? 'native'}`];
  if (g === 'vulkan') return ['-DGGML_VULKAN=ON'];
  if (g === 'metal') return ['-DGGML_METAL=ON'];
  return [];
}

/**
 * Configures and builds `targets` in `cmakeDir`.
 * ccache hashes relative paths (CCACHE_BASEDIR): a clone in another folder (CI) reuses the cache.
 */
function build(cmakeDir, extraDefs, targets) {
  run('cmake', ['-S', nativeDir, '-B', cmakeDir, ...defs, ...extraCmakeArgs, ...extraDefs], { stdio: ['ignore', 'ignore', 'inherit'] });
  run('cmake', ['--build', cmakeDir, '--target', ...targets, '--parallel', jobs], {
    env: { ...process.env, CCACHE_BASEDIR: root, CCACHE_NOHASHDIR: 'true' },
  });
}

/** Copies `from` to `to` through a temporary file and a rename: a process that has the old file mapped keeps its pages. */
function install(from, to) {
  fs.copyFileSync(from, `${to}.tmp-${process.pid}`);
  fs.renameSync(`${to}.tmp-${process.pid}`, to);
}

/** Whether a file name is one of the engine's shared libraries or backend modules. */
const isEngineLibrary = (f) => /^(lib)?(llama|ggml[\w.-]*)\.(so|dll|dylib)$/.test(f);

fs.mkdirSync(outDir, { recursive: true });
const testExe = target.startsWith('win32') ? 'snapkv-compact-test.exe' : 'snapkv-compact-test';
if (portable) {
  // the CPU engine: the addon, the shared libraries, every CPU variant and RPC module, the C++ test
  const cmakeDir = cmakeFolder('cmake');
  build(cmakeDir, [], ['reposnap', 'snapkv-compact-test']);
  const bin = path.join(cmakeDir, 'bin');
  const libs = fs.readdirSync(bin).filter(isEngineLibrary);
  // a library of an earlier build that this one no longer makes (a renamed variant) must not be loaded
  for (const f of fs.readdirSync(outDir)) {
    if (isEngineLibrary(f) && !libs.includes(f) && !/ggml-(cuda|vulkan|metal)\./.test(f)) fs.rmSync(path.join(outDir, f));
  }
  for (const f of libs) install(path.join(bin, f), path.join(outDir, f));
  install(path.join(bin, 'reposnap.node'), path.join(outDir, 'reposnap.node'));
  install(path.join(bin, testExe), path.join(outDir, testExe));
  if (gpu !== 'cpu') {
    // one more module, built from the same patched tree with the same options (same ggml-base ABI)
    const gpuDir = cmakeFolder(`cmake-${gpu}`);
    build(gpuDir, gpuDefs(gpu), [`ggml-${gpu}`]);
    const mod = fs.readdirSync(path.join(gpuDir, 'bin')).find((f) => f.startsWith(`${target.startsWith('win32') ? '' : 'lib'}ggml-${gpu}.`));
    if (!mod) fail(`the ${gpu} build made no ggml-${gpu} module in ${path.join(gpuDir, 'bin')}`);
    // in gpu/: the engine loads it only as REPOSNAP_BACKEND allows (native/addon/backends.cpp)
    fs.mkdirSync(path.join(outDir, 'gpu'), { recursive: true });
    install(path.join(gpuDir, 'bin', mod), path.join(outDir, 'gpu', mod));
    console.log(`[native] built ${path.relative(root, path.join(outDir, 'gpu', mod))}`);
  }
} else {
  const cmakeDir = cmakeFolder(gpu === 'cpu' ? 'cmake-static' : `cmake-static-${gpu}`);
  build(cmakeDir, gpuDefs(gpu), ['reposnap', 'snapkv-compact-test']);
  install(path.join(cmakeDir, 'reposnap.node'), path.join(outDir, gpu === 'cpu' ? 'reposnap.node' : `reposnap-${gpu}.node`));
  install(path.join(cmakeDir, testExe), path.join(outDir, gpu === 'cpu' ? testExe : `snapkv-compact-test-${gpu}`));
}

// the engine's identity: state files record it and refuse to load across engine changes
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
fs.writeFileSync(path.join(outDir, 'engine.json'), JSON.stringify({ version: `${pkg.version}+${stamp.slice(0, 12)}`, llamaCpp: tag, patches, portable, target }, null, 2) + '\n');
console.log(`[native] built ${path.relative(root, path.join(outDir, 'reposnap.node')) || outDir} (${portable ? 'portable: CPU variants chosen at run time' : 'static, for this CPU'})`);
