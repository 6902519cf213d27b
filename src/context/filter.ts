import { constants as fsConstants, promises as fsp } from 'node:fs';
import { errorCode } from './errors';

/** Default per-file cap, in bytes (256 KiB). Larger files are skipped as `'too-large'`. */
export const DEFAULT_MAX_FILE_BYTES = 262_144;

/** How many leading bytes are scanned for a NUL byte (8 KiB). */
export const BINARY_SNIFF_BYTES = 8_192;

/** The decision for one file. `bytes` is always the file's size on disk, in bytes. */
export type FileVerdict =
  | { kind: 'text'; bytes: number; text: string }
  | { kind: 'skip'; bytes?: number; reason: 'binary' | 'too-large' | 'unreadable' | 'special'; detail: string };

/** Options for `readTextFile`. */
export interface FilterOptions {
  /** Cap in bytes; a file with more bytes is `'too-large'`. Default `DEFAULT_MAX_FILE_BYTES`. */
  maxFileBytes?: number;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Returns true when `data` looks binary: a NUL byte among its first `BINARY_SNIFF_BYTES`
 * bytes, or bytes that are not valid UTF-8 anywhere in `data`. Empty data is text.
 */
export function looksBinary(data: Uint8Array): boolean {
  return decodeUtf8(data) === undefined;
}

/**
 * Decodes `data` as strict UTF-8, returning `undefined` when it looks binary (see
 * `looksBinary`). A leading byte-order mark is dropped.
 */
export function decodeUtf8(data: Uint8Array): string | undefined {
  if (data.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return undefined;
  try {
    return utf8.decode(data);
  } catch {
    return undefined;
  }
}

/**
 * Reads the file at `absPath` and decides whether it can be packed:
 *
 * - larger than `maxFileBytes` bytes (checked before reading the content) → `'too-large'`;
 * - binary (see `looksBinary`) → `'binary'`;
 * - not a regular file when opened (e.g. replaced by a FIFO since the walk) → `'special'`;
 * - cannot be opened or read (EACCES, ENOENT, a symlink swapped in: ELOOP) → `'unreadable'`;
 * - otherwise `'text'` with the decoded content; an empty file is text `''`.
 *
 * Never throws and never rejects: every failure is a verdict. The file is opened without
 * following a final symlink (where the platform supports it) and without blocking on FIFOs.
 */
export async function readTextFile(absPath: string, options: FilterOptions = {}): Promise<FileVerdict> {
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const flags = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(absPath, flags);
  } catch (err) {
    return { kind: 'skip', reason: 'unreadable', detail: `cannot open: ${errorCode(err)}` };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { kind: 'skip', reason: 'special', detail: 'not a regular file' };
    const size = info.size;
    if (size > maxFileBytes) {
      return { kind: 'skip', bytes: size, reason: 'too-large', detail: `${size} bytes > cap of ${maxFileBytes} bytes` };
    }
    // Read one byte more than the cap so that a file that grew since stat is still caught.
    const buffer = Buffer.alloc(Math.min(size, maxFileBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxFileBytes) {
      return { kind: 'skip', bytes: length, reason: 'too-large', detail: `more than ${maxFileBytes} bytes (grew while reading)` };
    }
    const data = buffer.subarray(0, length);
    const text = decodeUtf8(data);
    if (text === undefined) {
      return { kind: 'skip', bytes: length, reason: 'binary', detail: 'NUL byte or invalid UTF-8' };
    }
    return { kind: 'text', bytes: length, text };
  } catch (err) {
    return { kind: 'skip', reason: 'unreadable', detail: `cannot read: ${errorCode(err)}` };
  } finally {
    await handle.close().catch(() => undefined);
  }
}
