// Checks that native binaries are built for a VS Code target, with `file` (libmagic): the defect
// native extensions ship most often is a binary of another platform or architecture in a package.
// Used by scripts/package.mjs on the staged engine and again on every binary inside the VSIX.
import { execFileSync } from 'node:child_process';

/** VS Code's platform-specific targets this project builds (`vsce package --target`). */
export const TARGETS = ['linux-x64', 'linux-arm64', 'win32-x64', 'darwin-arm64', 'darwin-x64'];

/**
 * What `file -b` says of a shared library or addon built for `target`.
 * @param {string} target one of {@link TARGETS}
 * @returns {RegExp}
 * @throws Error for another target
 */
export function expectedFileType(target) {
  switch (target) {
    case 'linux-x64': return /^ELF 64-bit LSB (shared object|pie executable), x86-64\b/;
    case 'linux-arm64': return /^ELF 64-bit LSB (shared object|pie executable), ARM aarch64\b/;
    case 'win32-x64': return /^PE32\+ executable \(DLL\) .*x86-64/;
    case 'darwin-arm64': return /^Mach-O 64-bit (dynamically linked shared library|bundle) arm64\b/;
    case 'darwin-x64': return /^Mach-O 64-bit (dynamically linked shared library|bundle) x86_64\b/;
    default: throw new Error(`unknown target '${target}' (${TARGETS.join(', ')})`);
  }
}

/** Whether a file name is a native binary a package may hold (.node, .so, .dll, .dylib). */
export function isNativeBinary(name) {
  return /\.(node|so|dll|dylib)$/i.test(name);
}

/**
 * The binaries among `files` that are not built for `target`, with what `file` says of each.
 * @param {string[]} files paths
 * @param {string} target one of {@link TARGETS}
 * @returns {{ file: string, type: string }[]} the mismatches (empty: all match)
 * @throws Error when `file` is not installed (Debian: apt-get install file)
 */
export function wrongArchitecture(files, target) {
  const want = expectedFileType(target);
  const bad = [];
  for (const f of files) {
    let type;
    try {
      type = execFileSync('file', ['-b', f], { encoding: 'utf8' }).trim();
    } catch (e) {
      if (e.code === 'ENOENT') throw new Error("'file' is needed to check the package's binaries (Debian: apt-get install file)");
      throw e;
    }
    if (!want.test(type)) bad.push({ file: f, type });
  }
  return bad;
}
