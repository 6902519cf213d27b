/**
 * The portable engine (native/build.mjs default: GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS): one CPU
 * backend library per instruction-set level beside the addon, the best one this CPU supports loaded
 * at run time and named everywhere (backends(), backendLoad(), llama_print_system_info's VARIANT);
 * the engine runs from any folder it is copied to ($ORIGIN); a GPU module that cannot be loaded is a
 * note and the engine answers on the CPU. The variant expected here is computed independently from
 * /proc/cpuinfo and ggml's two tables (test/helpers/cpu-variants.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { describeEngine, engineBackends, isQuietNote, type NativeBackendLoad } from '../../src/engine/backends';
import { loadAddon, packageRoot } from '../../src/engine/native';
import { expectedX86Variant, hostCpuFlags, X86_VARIANTS } from '../helpers/cpu-variants';
import { TINY_MODEL } from '../helpers/models';

const BUILD = path.join(packageRoot(), 'native', 'build');
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';

/** Runs a script in a fresh node with an addon file and an environment; returns its stdout's JSON. */
function inChild(addon: string, env: Record<string, string>, script: string): unknown {
  const out = execFileSync(process.execPath, ['-e', `const a = require(${JSON.stringify(addon)}); ${script}`], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return JSON.parse(out);
}

test('the build is portable: engine.json says so, and every x86-64 CPU variant of ggml is a library beside the addon', () => {
  const info = JSON.parse(fs.readFileSync(path.join(BUILD, 'engine.json'), 'utf8')) as { portable?: boolean };
  assert.equal(info.portable, true);
  const libs = fs.readdirSync(BUILD).filter((f) => /^libggml-cpu-.*\.so$/.test(f)).map((f) => f.slice('libggml-cpu-'.length, -'.so'.length)).sort();
  if (linuxX64) assert.deepEqual(libs, Object.keys(X86_VARIANTS).sort());
  else assert.ok(libs.length > 0);
  for (const f of ['reposnap.node', 'libllama.so', 'libggml.so', 'libggml-base.so', 'libggml-rpc.so']) assert.ok(fs.existsSync(path.join(BUILD, f)), `${f} is missing`);
});

test('the CPU variant loaded is the one ggml scores best for this CPU, named by backends(), backendLoad() and llama_print_system_info()', (t) => {
  const flags = hostCpuFlags((f) => fs.readFileSync(f, 'utf8'));
  if (!linuxX64 || !flags) return t.skip('the expected variant is computed from /proc/cpuinfo on x86-64 Linux');
  const want = expectedX86Variant(flags);
  const addon = loadAddon();
  const load = addon.backendLoad!();
  assert.equal(load.dynamic, true);
  assert.equal(load.cpuVariant, want);
  assert.equal(load.dir, BUILD);
  assert.equal(addon.backends!().find((b) => b.name === 'CPU')?.variant, want);
  assert.match(addon.systemInfo(), new RegExp(`^CPU : VARIANT = ${want} \\|`, 'm'));
  assert.ok(addon.backends!().some((b) => b.name === 'RPC'), 'the RPC module is loaded');
});

test('the hand-checked scoring: Nehalem → sse42, Haswell → haswell, Zen 4 → zen4, Sapphire Rapids → sapphirerapids, a bare x86-64 → x64', () => {
  const nehalem = ['sse', 'sse2', 'ssse3', 'sse4_1', 'sse4_2', 'popcnt'];
  const haswell = [...nehalem, 'avx', 'f16c', 'fma', 'avx2', 'bmi2'];
  const avx512 = ['avx512f', 'avx512cd', 'avx512vl', 'avx512dq', 'avx512bw'];
  assert.equal(expectedX86Variant(new Set(['sse', 'sse2'])), 'x64');
  assert.equal(expectedX86Variant(new Set(nehalem)), 'sse42');
  assert.equal(expectedX86Variant(new Set(haswell)), 'haswell');
  assert.equal(expectedX86Variant(new Set([...haswell, 'avx_vnni'])), 'alderlake');
  assert.equal(expectedX86Variant(new Set([...haswell, ...avx512, 'avx512vbmi', 'avx512_vnni', 'avx512_bf16', 'avx_vnni'])), 'zen4');
  assert.equal(expectedX86Variant(new Set([...haswell, ...avx512, 'avx512vbmi', 'avx512_vnni', 'avx512_bf16', 'amx_tile', 'amx_int8'])), 'sapphirerapids');
  // four of the five AVX-512 subsets are not AVX-512 for ggml
  assert.equal(expectedX86Variant(new Set([...haswell, ...avx512.slice(0, 4)])), 'haswell');
});

test('the engine runs from a copy in another folder (RUNPATH $ORIGIN, no build path), and a GPU module that cannot load is one note', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-portable-'));
  try {
    for (const f of fs.readdirSync(BUILD)) if (f === 'reposnap.node' || /\.so$/.test(f)) fs.copyFileSync(path.join(BUILD, f), path.join(dir, f));
    const addon = path.join(dir, 'reposnap.node');
    if (process.platform === 'linux') {
      for (const f of ['reposnap.node', 'libllama.so', 'libggml-cpu-x64.so']) {
        const dyn = execFileSync('readelf', ['-d', path.join(dir, f)], { encoding: 'utf8' });
        assert.match(dyn, /\((RUNPATH|RPATH)\)\s+Library r(un)?path: \[\$ORIGIN\]/, `${f}:\n${dyn}`);
        // the engine's own libraries by their unversioned names (a package holds each file once, no symlinks)
        assert.doesNotMatch(dyn, /\[lib(llama|ggml[\w-]*)\.so\.\d/, `${f} needs a versioned engine library:\n${dyn}`);
      }
    }
    // a model answers through the copy (stories260K: tokenize and one decode)
    const n = inChild(addon, { REPOSNAP_BACKEND: 'cpu' }, `a.loadModel(${JSON.stringify(TINY_MODEL)}, {}).then((m) => { const l = a.backendLoad(); process.stdout.write(JSON.stringify({ vocab: m.info().nVocab, load: l })); })`) as { vocab: number; load: NativeBackendLoad };
    assert.equal(n.vocab, 512);
    assert.equal(n.load.dir, dir);
    assert.deepEqual(n.load.notes, []);
    // asked for a GPU backend the engine does not have: a note naming the file, the CPU answers
    const none = inChild(addon, { REPOSNAP_BACKEND: 'vulkan' }, 'process.stdout.write(JSON.stringify(a.backendLoad()))') as NativeBackendLoad;
    assert.deepEqual(none.notes, [`vulkan: this engine has no vulkan backend (${path.join(dir, 'gpu', 'libggml-vulkan.so')} is missing)`]);
    assert.deepEqual(none.loaded, []);
    // a module the dynamic loader refuses (here: not an ELF file; on a user's machine: libvulkan.so.1 missing)
    fs.mkdirSync(path.join(dir, 'gpu'));
    fs.writeFileSync(path.join(dir, 'gpu', 'libggml-vulkan.so'), 'not a library');
    const bad = inChild(addon, {}, 'process.stdout.write(JSON.stringify({ l: a.backendLoad(), b: a.backends().map((x) => x.name) }))') as { l: NativeBackendLoad; b: string[] };
    assert.equal(bad.l.request, 'auto');
    assert.equal(bad.l.notes.length, 1);
    assert.match(bad.l.notes[0], /^vulkan: the vulkan backend could not be loaded \(.*libggml-vulkan\.so: (invalid ELF header|file too short)\)$/);
    assert.ok(!bad.b.includes('Vulkan') && bad.b.includes('CPU'));
    const bogus = inChild(addon, { REPOSNAP_BACKEND: 'tpu' }, 'process.stdout.write(JSON.stringify(a.backendLoad()))') as NativeBackendLoad;
    assert.deepEqual(bogus.notes, ["REPOSNAP_BACKEND='tpu' is not one of auto, cpu, cuda, vulkan, metal: using the CPU"]);
    // without its CPU libraries the engine says why instead of crashing
    fs.rmSync(path.join(dir, 'gpu'), { recursive: true });
    for (const f of fs.readdirSync(dir)) if (f.startsWith('libggml-cpu-')) fs.rmSync(path.join(dir, f));
    const r = spawnSync(process.execPath, ['-e', `const a = require(${JSON.stringify(addon)}); process.stdout.write(JSON.stringify(a.backendLoad().notes))`], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [`cpu: no CPU backend in ${dir} (its libggml-cpu-*.so files are missing, or none runs on this CPU)`]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('engineBackends and describeEngine: one line for the log, from the addon\'s own report', () => {
  const fake = {
    backendLoad: (): NativeBackendLoad => ({ dynamic: true, dir: '/x', request: 'auto', cpuVariant: 'haswell', loaded: ['/x/gpu/libggml-vulkan.so'], notes: ['cuda: the cuda backend could not be loaded (libcuda.so.1: cannot open shared object file: No such file or directory)'] }),
    backends: () => [
      { name: 'Vulkan', devices: [{ name: 'Vulkan0', description: 'llvmpipe (LLVM 15.0.6, 256 bits)', type: 'gpu' as const }] },
      { name: 'RPC', devices: [] },
      { name: 'CPU', variant: 'haswell', devices: [{ name: 'CPU', description: 'AMD EPYC', type: 'cpu' as const }] },
    ],
  };
  const e = engineBackends(fake);
  assert.deepEqual(e, { build: 'portable', cpuVariant: 'haswell', gpus: ['Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits)'], backends: ['Vulkan', 'RPC', 'CPU'], notes: [fake.backendLoad().notes[0]], quietNotes: [] });
  assert.equal(describeEngine(e), 'engine: portable, CPU variant haswell; GPU Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits); backends Vulkan, RPC, CPU');
  // auto on a machine without a Vulkan GPU: the packaged module finding no device is the normal
  // case, in the log line only; asked for by name (reposnap.GPU: vulkan) it is a notice
  const noDevice = 'vulkan: the vulkan backend found no device';
  const cpuOnly = (request: string) => ({
    backendLoad: (): NativeBackendLoad => ({ dynamic: true, dir: '/x', request, cpuVariant: 'sse42', loaded: [], notes: [noDevice] }),
    backends: () => [{ name: 'CPU', variant: 'sse42', devices: [] }],
  });
  const auto = engineBackends(cpuOnly('auto'));
  assert.deepEqual([auto.notes, auto.quietNotes], [[], [noDevice]]);
  assert.equal(describeEngine(auto), 'engine: portable, CPU variant sse42; no GPU; backends CPU; not used: vulkan: the vulkan backend found no device');
  const asked = engineBackends(cpuOnly('vulkan'));
  assert.deepEqual([asked.notes, asked.quietNotes], [[noDevice], []]);
  assert.equal(isQuietNote('cuda: the cuda backend could not be loaded (libcuda.so.1: cannot open shared object file)', 'auto'), false);
  // an engine built before backendLoad existed: static, no notes
  const old = engineBackends({ backends: () => [{ name: 'CPU', devices: [] }] });
  assert.equal(describeEngine(old), 'engine: static build for this CPU; no GPU; backends CPU');
});
