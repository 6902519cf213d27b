import { isUtf8 } from 'node:buffer';
import { constants as fsConstants, type Stats } from 'node:fs';
import { decodeLegacy, detectAndDecode, type LegacyEncodingName } from './encoding';
import { errorCode } from './errors';
import { nodeFs, type ContextFileHandle, type ContextFs } from './fsapi';
import type { SkipReason } from './types';

/** Default per-file cap, in bytes (256 KiB). Larger files are skipped as `'too-large'`. */
export const DEFAULT_MAX_FILE_BYTES = 262_144;

/** How many leading bytes of a file over the cap are read to say why it is left out (8 KiB). */
export const BINARY_SNIFF_BYTES = 8_192;

/** A file is `'minified'` when its longest line is longer than this, in UTF-16 code units... */
export const MINIFIED_LINE_CHARS = 1_000;

/** ...and its lines are, on average, longer than this (characters per line). */
export const MINIFIED_MEAN_LINE_CHARS = 200;

/** Generated-file markers are looked for in this many leading lines (within the first 4 KiB). */
export const GENERATED_MARKER_LINES = 10;

/**
 * File extensions (lower case, with the dot) whose files are `'binary'` without being
 * opened: images, fonts, archives, office documents, audio and video, compiled code,
 * databases, model weights and other numeric data. SVG is text and not listed.
 */
export const BINARY_EXTENSIONS: ReadonlySet<string> = new Set(
  (
    '.png .jpg .jpeg .gif .bmp .ico .icns .webp .tif .tiff .psd .heic .avif .xcf ' +
    '.woff .woff2 .ttf .otf .eot ' +
    '.zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .jar .war .ear .whl .apk .dmg .iso .deb .rpm ' +
    '.pdf .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp ' +
    '.mp3 .mp4 .m4a .wav .ogg .flac .webm .mov .avi .mkv ' +
    '.exe .dll .so .dylib .a .o .obj .lib .class .pyc .pyo .wasm .node ' +
    '.db .sqlite .sqlite3 .npy .npz .pt .pth .onnx .gguf .safetensors .ckpt .h5 .pkl .parquet'
  ).split(' '),
);

/**
 * The encoding a text file was decoded with, by its WHATWG Encoding Standard name: UTF-8,
 * UTF-16 (with a byte-order mark), or a detected legacy encoding (see `LegacyEncodingName`).
 */
export type TextEncodingName = 'utf-8' | 'utf-16le' | 'utf-16be' | LegacyEncodingName;

/** The reasons `readTextFile` can give for leaving a file out (a subset of `SkipReason`). */
export type FileSkipReason = Extract<
  SkipReason,
  'binary' | 'too-large' | 'empty' | 'minified' | 'generated' | 'unreadable' | 'vanished' | 'changed'
>;

/**
 * The decision for one file. `bytes` is the file's size on disk, in bytes, where known;
 * `mtimeMs` its modification time (ms since the epoch) when the content was read.
 */
export type FileVerdict =
  | {
      kind: 'text';
      bytes: number;
      mtimeMs: number;
      /** Decoded, with line ends normalized to LF and any byte-order mark removed. */
      text: string;
      encoding: TextEncodingName;
      /** What was done to the bytes, for the manifest (e.g. "decoded as Shift_JIS (detected, confidence 100)"); may be empty. */
      notes: string[];
    }
  | { kind: 'skip'; bytes?: number; reason: FileSkipReason; detail: string };

/** Options for `readTextFile`. */
export interface FilterOptions {
  /** Cap in bytes; a file with more bytes is left out. Default `DEFAULT_MAX_FILE_BYTES`. */
  maxFileBytes?: number;
  /** Look for minified and generated files (`'minified'`, `'generated'`). Default true. */
  detectGenerated?: boolean;
  /** The file system to use. Default: the real one (`nodeFs`). */
  fs?: ContextFs;
  /**
   * Size (bytes) and mtime (ms since the epoch) the walk's `lstat` saw. `bytes` is reported
   * for files skipped without being opened; and when both still hold, the file is read with
   * one `fstat` fewer (open, read, fstat, close).
   */
  expected?: { bytes: number; mtimeMs: number };
}

/** The result of `decodeText`. */
export type DecodeResult =
  | { ok: true; text: string; encoding: TextEncodingName; notes: string[] }
  | { ok: false; detail: string };

/**
 * Decodes file content, or says why it is binary. The policy, in order:
 *
 * 1. A UTF-8 byte-order mark: the rest must be valid UTF-8 (the mark is dropped).
 *    A UTF-16 LE/BE byte-order mark: decoded as UTF-16 (must be well-formed).
 * 2. A known binary signature at offset 0 (PDF, PNG, GIF, JPEG, ZIP, gzip, ELF, 7z, xz,
 *    bzip2, SQLite, RepoSnap's KV state files) → binary.
 * 3. A NUL byte anywhere (or U+0000 after UTF-16 decoding) → binary.
 * 4. Valid UTF-8 → UTF-8.
 * 5. Otherwise (a legacy encoding), a C0 control byte other than TAB, LF, VT, FF, CR, SUB and
 *    ESC → binary. Then the encoding is detected (`detectAndDecode`, src/context/encoding.ts:
 *    chardet's guesses with a confidence of at least `minConfidence`, default
 *    `DEFAULT_MIN_CONFIDENCE`, that decode every byte), noted as "decoded as Shift_JIS
 *    (detected, confidence 100)". When none fits, the bytes are taken as Windows-1252 (a
 *    superset of printable Latin-1) if none of them is one of the five bytes it leaves
 *    undefined (0x81 0x8D 0x8F 0x90 0x9D), noted with the detector's best guess; else → binary.
 *
 * `truncated: true` means `data` is a prefix of the file: an incomplete character at its
 * end is not an error. Line ends are not touched here (see `readTextFile`). Never throws.
 */
export function decodeText(data: Uint8Array, options: { truncated?: boolean; minConfidence?: number } = {}): DecodeResult {
  const truncated = options.truncated ?? false;
  if (startsWith(data, [0xef, 0xbb, 0xbf])) {
    const body = truncated ? trimIncompleteUtf8(data.subarray(3)) : data.subarray(3);
    const nul = body.indexOf(0);
    if (nul >= 0) return { ok: false, detail: `NUL byte at offset ${nul + 3}` };
    if (!isUtf8(body)) return { ok: false, detail: 'invalid UTF-8 after a UTF-8 byte-order mark' };
    return { ok: true, text: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'), encoding: 'utf-8', notes: ['UTF-8 byte-order mark removed'] };
  }
  if (startsWith(data, [0xff, 0xfe]) || startsWith(data, [0xfe, 0xff])) {
    const bigEndian = data[0] === 0xfe;
    let body = data.subarray(2);
    if (truncated && body.length % 2 === 1) body = body.subarray(0, body.length - 1);
    const text = decodeUtf16(body, bigEndian);
    const name = bigEndian ? 'UTF-16BE' : 'UTF-16LE';
    if (text === undefined) return { ok: false, detail: `invalid ${name} after a byte-order mark` };
    const nul = text.indexOf('\u0000');
    if (nul >= 0) return { ok: false, detail: `NUL character at index ${nul} (${name})` };
    return { ok: true, text, encoding: bigEndian ? 'utf-16be' : 'utf-16le', notes: [`decoded as ${name} (byte-order mark)`] };
  }
  const signature = binarySignature(data);
  if (signature !== undefined) return { ok: false, detail: `${signature} signature` };
  const nul = data.indexOf(0);
  if (nul >= 0) return { ok: false, detail: `NUL byte at offset ${nul}` };
  const utf8 = truncated ? trimIncompleteUtf8(data) : data;
  if (isUtf8(utf8)) {
    return { ok: true, text: Buffer.from(utf8.buffer, utf8.byteOffset, utf8.byteLength).toString('utf8'), encoding: 'utf-8', notes: [] };
  }
  const invalid = firstInvalidUtf8(utf8);
  const where = `byte 0x${hex(data[invalid] ?? 0)} at offset ${invalid}`;
  const control = firstControlByte(data);
  if (control >= 0) return { ok: false, detail: `not UTF-8 (${where}) and not text (control byte 0x${hex(data[control]!)} at offset ${control})` };
  const legacy = detectAndDecode(data, { truncated, ...(options.minConfidence !== undefined ? { minConfidence: options.minConfidence } : {}) });
  if (legacy.ok) {
    const { text, encoding, display, confidence } = legacy.decoding;
    return { ok: true, text, encoding, notes: [`not valid UTF-8 (${where}); decoded as ${display} (detected, confidence ${confidence})`] };
  }
  const guess = legacy.best !== undefined ? `best guess ${legacy.best.display}, confidence ${legacy.best.confidence}` : 'no guess';
  const cp1252 = decodeLegacy(data, 'windows-1252');
  if (cp1252 === undefined) {
    const undefinedByte = data.findIndex((b) => b === 0x81 || b === 0x8d || b === 0x8f || b === 0x90 || b === 0x9d);
    return { ok: false, detail: `not UTF-8 (${where}), no encoding detected (${guess}) and not Windows-1252 text (byte 0x${hex(data[undefinedByte]!)} at offset ${undefinedByte})` };
  }
  return { ok: true, text: cp1252, encoding: 'windows-1252', notes: [`not valid UTF-8 (${where}); decoded as Windows-1252 (no encoding detected: ${guess})`] };
}

/** Why `text` should be left out as `'empty'`, `'generated'` or `'minified'`, if it should. */
export interface TextClassification {
  reason: 'empty' | 'generated' | 'minified';
  detail: string;
}

/**
 * Classifies decoded text (see `SkipReason`): `'empty'` when it is empty or only whitespace;
 * with `detectGenerated` (default true) `'generated'` when one of the first
 * `GENERATED_MARKER_LINES` lines (within the first 4 KiB) carries a generated-file marker,
 * and `'minified'` when the longest line exceeds `MINIFIED_LINE_CHARS` and the mean line
 * length exceeds `MINIFIED_MEAN_LINE_CHARS`. The markers: `@generated`; `DO NOT EDIT` or
 * `DO NOT MODIFY` in capitals (Go's "Code generated ... DO NOT EDIT.", protoc, many tools);
 * `<auto-generated` (.NET); and, on a comment line, "this file is/was (auto-)generated",
 * "auto-generated ..." or "automatically generated ..." at the start of the comment.
 * Returns `undefined` for text to keep. Pure function; never throws.
 */
export function classifyText(text: string, detectGenerated = true): TextClassification | undefined {
  if (text.trim() === '') return { reason: 'empty', detail: text.length === 0 ? 'no content' : 'only whitespace' };
  if (!detectGenerated) return undefined;
  const marker = generatedMarker(text);
  if (marker !== undefined) return { reason: 'generated', detail: marker };
  const { longest, mean } = lineStats(text);
  if (longest > MINIFIED_LINE_CHARS && mean > MINIFIED_MEAN_LINE_CHARS) {
    return { reason: 'minified', detail: `longest line ${longest} characters, ${Math.round(mean)} per line on average` };
  }
  return undefined;
}

/** The lower-case extension (with its dot) of `filePath` when it is in `BINARY_EXTENSIONS`. */
export function binaryExtensionOf(filePath: string): string | undefined {
  const name = filePath.slice(Math.max(filePath.lastIndexOf('/'), filePath.lastIndexOf('\\')) + 1);
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const ext = name.slice(dot).toLowerCase();
  return BINARY_EXTENSIONS.has(ext) ? ext : undefined;
}

/**
 * Returns true when `data` is binary by `decodeText`'s policy (a binary signature, a NUL
 * byte, a control byte, or bytes that are neither UTF-8, UTF-16 with a byte-order mark, text in
 * a detected legacy encoding, nor Windows-1252 text). Empty data is text.
 */
export function looksBinary(data: Uint8Array): boolean {
  return !decodeText(data).ok;
}

/**
 * Reads the file at `absPath` and decides whether it can be packed. Checks, in order:
 *
 * - a binary extension (`BINARY_EXTENSIONS`) → `'binary'`, without opening the file;
 * - cannot be opened: ENOENT/ENOTDIR → `'vanished'`; ELOOP (a symlink swapped in; the file
 *   is opened with O_NOFOLLOW) → `'changed'`; anything else (EACCES, EIO, ...) → `'unreadable'`;
 * - not a regular file once opened (a directory or FIFO swapped in) → `'changed'`;
 * - 0 bytes → `'empty'`;
 * - over `maxFileBytes`: its first `BINARY_SNIFF_BYTES` bytes are read and the most
 *   specific reason is given: `'binary'`, `'generated'` (a marker), `'minified'` (a line of
 *   at least half of those bytes), else `'too-large'`;
 * - the content is read; if the file's size or mtime changes while it is read, it is read
 *   once more, and if it changes again → `'changed'` (with `expected`, a first read is
 *   checked against the walk's size and mtime instead, and falls back to this on a mismatch);
 * - decoded with `decodeText` (failure → `'binary'`); then a UTF-8 byte-order mark is
 *   dropped and CRLF and lone CR line ends become LF (each noted in `notes`);
 * - `classifyText`: `'empty'`, `'generated'`, `'minified'`;
 * - otherwise `'text'` with the content.
 *
 * Never throws and never rejects: every failure is a verdict. The file is opened without
 * following a final symlink (where the platform supports it) and without blocking on FIFOs.
 */
export async function readTextFile(absPath: string, options: FilterOptions = {}): Promise<FileVerdict> {
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const detectGenerated = options.detectGenerated ?? true;
  const fs = options.fs ?? nodeFs;
  const ext = binaryExtensionOf(absPath);
  if (ext !== undefined) {
    return { kind: 'skip', ...(options.expected !== undefined ? { bytes: options.expected.bytes } : {}), reason: 'binary', detail: `binary file extension '${ext}'` };
  }
  const expected = options.expected;
  if (expected !== undefined && expected.bytes > 0 && expected.bytes <= maxFileBytes) {
    const fast = await readAsExpected(fs, absPath, expected, detectGenerated);
    if (fast !== CHANGED) return fast;
  }
  let result = await readOnce(fs, absPath, maxFileBytes, detectGenerated);
  if (result === CHANGED) result = await readOnce(fs, absPath, maxFileBytes, detectGenerated);
  if (result === CHANGED) return { kind: 'skip', reason: 'changed', detail: 'modified while being read (twice)' };
  return result;
}

const CHANGED = Symbol('changed while reading');
const OPEN_FLAGS = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);

type Attempt = FileVerdict | typeof CHANGED;

/**
 * Opens `absPath` and runs `body` on the handle, closing it after; open and read errors
 * become verdicts.
 */
async function withFile(fs: ContextFs, absPath: string, body: (handle: ContextFileHandle) => Promise<Attempt>): Promise<Attempt> {
  let handle: ContextFileHandle;
  try {
    handle = await fs.open(absPath, OPEN_FLAGS);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'skip', reason: 'vanished', detail: `removed after the walk found it (${code})` };
    if (code === 'ELOOP') return { kind: 'skip', reason: 'changed', detail: 'replaced by a symbolic link after the walk (ELOOP)' };
    return { kind: 'skip', reason: 'unreadable', detail: `cannot open: ${code}` };
  }
  try {
    return await body(handle);
  } catch (err) {
    // A directory (EISDIR) or FIFO (EAGAIN) swapped in after the walk fails the read.
    const info = await handle.stat().catch(() => undefined);
    if (info !== undefined && !info.isFile()) return { kind: 'skip', reason: 'changed', detail: `replaced by ${kindName(info)} after the walk` };
    const code = errorCode(err);
    if (code === 'ENOENT') return { kind: 'skip', reason: 'vanished', detail: `removed while being read (${code})` };
    return { kind: 'skip', reason: 'unreadable', detail: `cannot read: ${code}` };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** The fast path: the walk's size and mtime still hold (checked after reading). */
function readAsExpected(fs: ContextFs, absPath: string, expected: { bytes: number; mtimeMs: number }, detectGenerated: boolean): Promise<Attempt> {
  return withFile(fs, absPath, async (handle) => {
    const buffer = Buffer.allocUnsafe(expected.bytes);
    const length = await readFully(handle, buffer);
    const after = await handle.stat();
    if (!after.isFile()) return { kind: 'skip', reason: 'changed', detail: `replaced by ${kindName(after)} after the walk` };
    if (length !== expected.bytes || after.size !== length || after.mtimeMs !== expected.mtimeMs) return CHANGED;
    return classifyContent(buffer, after.mtimeMs, detectGenerated);
  });
}

/** The careful path: fstat, read, fstat again; CHANGED when the two disagree. */
function readOnce(fs: ContextFs, absPath: string, maxFileBytes: number, detectGenerated: boolean): Promise<Attempt> {
  return withFile(fs, absPath, async (handle) => {
    const before = await handle.stat();
    if (!before.isFile()) return { kind: 'skip', reason: 'changed', detail: `replaced by ${kindName(before)} after the walk` };
    const size = before.size;
    if (size === 0) return { kind: 'skip', bytes: 0, reason: 'empty', detail: '0 bytes' };
    if (size > maxFileBytes) return sniffOversized(handle, size, maxFileBytes, detectGenerated);
    // Exactly `size` bytes (usually one read): a file that grows, shrinks or is rewritten
    // meanwhile shows in the second fstat, and is read again.
    const buffer = Buffer.allocUnsafe(size);
    const length = await readFully(handle, buffer);
    const after = await handle.stat();
    if (length !== size || after.size !== size || after.mtimeMs !== before.mtimeMs) return CHANGED;
    return classifyContent(buffer, before.mtimeMs, detectGenerated);
  });
}

/** Decodes, normalizes line ends and classifies a file's whole content. */
function classifyContent(data: Uint8Array, mtimeMs: number, detectGenerated: boolean): FileVerdict {
  const bytes = data.length;
  const decoded = decodeText(data);
  if (!decoded.ok) return { kind: 'skip', bytes, reason: 'binary', detail: decoded.detail };
  const { text, notes } = normalizeLineEnds(decoded.text, decoded.notes);
  const verdict = classifyText(text, detectGenerated);
  if (verdict !== undefined) return { kind: 'skip', bytes, ...verdict };
  return { kind: 'text', bytes, mtimeMs, text, encoding: decoded.encoding, notes };
}

/** Reads from offset 0 until `buffer` is full or the file ends; returns the bytes read. */
async function readFully(handle: ContextFileHandle, buffer: Uint8Array): Promise<number> {
  let length = 0;
  while (length < buffer.length) {
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  return length;
}

/** The most specific reason for a file over the cap, from its first `BINARY_SNIFF_BYTES` bytes. */
async function sniffOversized(handle: ContextFileHandle, size: number, maxFileBytes: number, detectGenerated: boolean): Promise<FileVerdict> {
  const head = Buffer.allocUnsafe(Math.min(size, BINARY_SNIFF_BYTES));
  const length = await readFully(handle, head);
  const decoded = decodeText(head.subarray(0, length), { truncated: true });
  const sizeNote = `${size} bytes, over the cap of ${maxFileBytes}`;
  if (!decoded.ok) return { kind: 'skip', bytes: size, reason: 'binary', detail: `${decoded.detail} (${sizeNote})` };
  if (detectGenerated) {
    const head = normalizeLineEnds(decoded.text, []).text;
    const marker = generatedMarker(head);
    if (marker !== undefined) return { kind: 'skip', bytes: size, reason: 'generated', detail: `${marker} (${sizeNote})` };
    // A head is a poor sample of line lengths: only a line of half the head or more says minified.
    const { longest, mean } = lineStats(head);
    if (longest >= BINARY_SNIFF_BYTES / 2) {
      return { kind: 'skip', bytes: size, reason: 'minified', detail: `longest line ${longest} characters, ${Math.round(mean)} per line on average in the first ${length} bytes (${sizeNote})` };
    }
  }
  return { kind: 'skip', bytes: size, reason: 'too-large', detail: `${size} bytes > cap of ${maxFileBytes} bytes` };
}

function normalizeLineEnds(text: string, notes: string[]): { text: string; notes: string[] } {
  if (!text.includes('\r')) return { text, notes };
  const out = [...notes];
  if (text.includes('\r\n')) out.push('CRLF line ends converted to LF');
  if (/\r(?!\n)/.test(text)) out.push('CR line ends converted to LF');
  return { text: text.replace(/\r\n?/g, '\n'), notes: out };
}

function kindName(info: Stats): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isSymbolicLink()) return 'a symbolic link';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  return 'something that is not a regular file';
}

// Markers, checked line by line; see classifyText.
const STRONG_MARKERS = [/@generated\b/, /\bDO NOT (?:EDIT|MODIFY)\b/, /<auto-generated\b/i];
const COMMENT_LINE = /^\s*(?:\/\/+|#+|\/\*+|\*+|<!--|--|;+|%+|"""|''')\s*/;
const COMMENT_MARKERS = [
  /\bthis\s+(?:file|code)\s+(?:is|was|has\s+been)\s+(?:auto-?generated|automatically\s+generated|generated)\b/i,
  /^(?:auto-?generated|automatically\s+generated)\b/i,
];

function generatedMarker(text: string): string | undefined {
  const lines = text.slice(0, 4096).split('\n', GENERATED_MARKER_LINES);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let hit = STRONG_MARKERS.some((re) => re.test(line));
    if (!hit) {
      const comment = COMMENT_LINE.exec(line);
      if (comment !== null) {
        const body = line.slice(comment[0].length);
        hit = COMMENT_MARKERS.some((re) => re.test(body));
      }
    }
    if (hit) {
      const shown = line.trim();
      return `generated-file marker on line ${i + 1}: ${JSON.stringify(shown.length > 80 ? shown.slice(0, 77) + '...' : shown)}`;
    }
  }
  return undefined;
}

/** Longest line and mean line length, in UTF-16 code units; a final newline ends the last line. */
function lineStats(text: string): { longest: number; mean: number } {
  let longest = 0;
  let lines = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end - start > longest) longest = end - start;
    lines++;
    start = end + 1;
  }
  return { longest, mean: lines === 0 ? 0 : text.length / lines };
}

const SIGNATURES: Array<[string, number[]]> = [
  ['PDF', [0x25, 0x50, 0x44, 0x46, 0x2d]],
  ['PNG', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['GIF', [0x47, 0x49, 0x46, 0x38]],
  ['JPEG', [0xff, 0xd8, 0xff]],
  ['ZIP', [0x50, 0x4b, 0x03, 0x04]],
  ['gzip', [0x1f, 0x8b]],
  ['ELF', [0x7f, 0x45, 0x4c, 0x46]],
  ['7z', [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]],
  ['xz', [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ['SQLite', [...Buffer.from('SQLite format 3\u0000', 'latin1')]],
  // RepoSnap's own KV state files (src/engine/state-file.ts: "RSNP", format version 1)
  ["RepoSnap's KV state file", [0x52, 0x53, 0x4e, 0x50, 0x01, 0x00, 0x00, 0x00]],
];

function binarySignature(data: Uint8Array): string | undefined {
  for (const [name, magic] of SIGNATURES) if (startsWith(data, magic)) return name;
  // bzip2: "BZh", a block size digit, then the block magic (the BCD digits of pi).
  if (startsWith(data, [0x42, 0x5a, 0x68]) && data[3]! >= 0x31 && data[3]! <= 0x39 && startsWith(data.subarray(4), [0x31, 0x41, 0x59, 0x26, 0x53, 0x59])) {
    return 'bzip2';
  }
  return undefined;
}

function startsWith(data: Uint8Array, prefix: readonly number[]): boolean {
  if (data.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[i] !== prefix[i]) return false;
  return true;
}

/** Drops an incomplete UTF-8 sequence at the end of `data` (a prefix cut mid-character). */
function trimIncompleteUtf8(data: Uint8Array): Uint8Array {
  let i = data.length - 1;
  let continuation = 0;
  while (i >= 0 && continuation < 3 && (data[i]! & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return data;
  const lead = data[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return data.length - i < need ? data.subarray(0, i) : data;
}

/** Offset of the first byte that does not start a valid UTF-8 sequence (-1 if all valid). */
function firstInvalidUtf8(data: Uint8Array): number {
  let i = 0;
  while (i < data.length) {
    const b = data[i]!;
    let need: number;
    let min: number;
    if (b < 0x80) {
      i++;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = 0x10000;
    } else {
      return i;
    }
    let cp = b & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const c = data[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return -1;
}

/** Offset of the first C0 control byte that text does not hold (-1 if none). */
function firstControlByte(data: Uint8Array): number {
  for (let i = 0; i < data.length; i++) {
    const b = data[i]!;
    // TAB LF VT FF CR, SUB (DOS end of file), ESC
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0b && b !== 0x0c && b !== 0x0d && b !== 0x1a && b !== 0x1b) return i;
  }
  return -1;
}

const utf16le = new TextDecoder('utf-16le', { fatal: true });

function decodeUtf16(body: Uint8Array, bigEndian: boolean): string | undefined {
  if (body.length % 2 === 1) return undefined;
  let bytes = body;
  if (bigEndian) {
    const swapped = new Uint8Array(body.length);
    for (let i = 0; i < body.length; i += 2) {
      swapped[i] = body[i + 1]!;
      swapped[i + 1] = body[i]!;
    }
    bytes = swapped;
  }
  try {
    return utf16le.decode(bytes);
  } catch {
    return undefined;
  }
}

function hex(byte: number): string {
  return byte.toString(16).toUpperCase().padStart(2, '0');
}
