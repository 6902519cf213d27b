/**
 * scripts/binary-arch.mjs, the check scripts/package.mjs runs on every native binary it stages and
 * on every one inside the VSIX: a binary of another architecture or platform fails the package.
 * The inputs are real (this build's libraries) and hand-made ELF headers whose machine field is
 * set by hand (EM_X86_64 = 62, EM_AARCH64 = 183; System V gABI), read by `file`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { expectedFileType, isNativeBinary, TARGETS, wrongArchitecture } from '../../scripts/binary-arch.mjs';
import { packageRoot } from '../../src/engine/native';

/** A 64-byte little-endian ELF64 header of a shared object (ET_DYN) for `machine`, nothing after it. */
function elfHeader(machine: number): Buffer {
  const b = Buffer.alloc(64);
  b.write('\x7fELF', 0, 'latin1');
  b[4] = 2; // ELFCLASS64
  b[5] = 1; // little-endian
  b[6] = 1; // EV_CURRENT
  b.writeUInt16LE(3, 16); // e_type ET_DYN
  b.writeUInt16LE(machine, 18); // e_machine
  b.writeUInt32LE(1, 20); // e_version
  b.writeUInt16LE(64, 52); // e_ehsize
  return b;
}

test('this build\'s libraries are linux-x64 binaries; an aarch64 or x86-64 ELF header is told apart; a text file is no binary of any target', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-arch-'));
  try {
    const arm = path.join(dir, 'arm.so');
    const x64 = path.join(dir, 'x64.so');
    const text = path.join(dir, 'fake.node');
    fs.writeFileSync(arm, elfHeader(183));
    fs.writeFileSync(x64, elfHeader(62));
    fs.writeFileSync(text, 'not a binary\n');
    const real = ['reposnap.node', 'libllama.so', 'libggml-cpu-haswell.so'].map((f) => path.join(packageRoot(), 'native', 'build', f));
    if (process.platform === 'linux' && process.arch === 'x64') {
      assert.deepEqual(wrongArchitecture(real, 'linux-x64'), []);
      assert.deepEqual(wrongArchitecture(real, 'linux-arm64').map((b) => b.file), real);
    }
    assert.deepEqual(wrongArchitecture([x64], 'linux-x64'), []);
    const bad = wrongArchitecture([arm, x64, text], 'linux-x64');
    assert.deepEqual(bad.map((b) => b.file), [arm, text]);
    assert.match(bad[0]!.type, /^ELF 64-bit LSB shared object, ARM aarch64/);
    assert.deepEqual(wrongArchitecture([arm], 'linux-arm64'), []);
    // a Linux library in a Windows or macOS package is caught too
    for (const t of ['win32-x64', 'darwin-arm64', 'darwin-x64']) assert.equal(wrongArchitecture([x64, arm], t).length, 2, t);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('every target has a file(1) pattern; an unknown target is refused; native binaries are .node/.so/.dll/.dylib', () => {
  for (const t of TARGETS) assert.ok(expectedFileType(t) instanceof RegExp);
  assert.throws(() => expectedFileType('linux-riscv64'), /unknown target 'linux-riscv64'/);
  assert.match('PE32+ executable (DLL) (console) x86-64, for MS Windows, 20 sections', expectedFileType('win32-x64'));
  assert.doesNotMatch('PE32 executable (DLL) (console) Intel 80386, for MS Windows', expectedFileType('win32-x64'));
  assert.match('Mach-O 64-bit bundle arm64', expectedFileType('darwin-arm64'));
  assert.deepEqual(['a.node', 'b.so', 'c.DLL', 'd.dylib', 'e.js', 'f.so.1'].filter(isNativeBinary), ['a.node', 'b.so', 'c.DLL', 'd.dylib']);
});
