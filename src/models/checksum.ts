/**
 * Content checks of model files: SHA-256 of a file (streamed, cancellable) and a record of the
 * files already checked, so that a multi-gigabyte model is hashed once and not on every start.
 * The record (`.reposnap-verified.json` in the models folder) keys each file by its absolute path,
 * remembers which model URI it was downloaded for (so a later start finds it without the
 * network), and trusts an entry only while the file's size and modification time are unchanged.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { makeFolder } from '../engine/state-file';

/** A model file's content does not match its expected digest. */
export class ChecksumError extends Error {
  constructor(
    message: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(message);
    this.name = 'ChecksumError';
  }
}

/**
 * The SHA-256 of a file as lowercase hex, read in 4 MiB chunks.
 * @param onProgress called with bytes hashed so far.
 * @throws the signal's reason when aborted; fs errors as they come.
 */
export async function sha256File(file: string, signal?: AbortSignal, onProgress?: (bytes: number) => void): Promise<string> {
  const hash = createHash('sha256');
  let bytes = 0;
  const stream = fs.createReadStream(file, { highWaterMark: 4 << 20, signal });
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
    onProgress?.(bytes);
  }
  return hash.digest('hex');
}

interface VerifiedEntry {
  /** Absent for a file whose digest is unknown (recorded only for its URI). */
  sha256?: string;
  size: number;
  mtimeMs: number;
  uri?: string;
}

const RECORD = '.reposnap-verified.json';

function readRecord(dir: string): Record<string, VerifiedEntry> {
  try {
    const json = JSON.parse(fs.readFileSync(path.join(dir, RECORD), 'utf8')) as unknown;
    return json && typeof json === 'object' ? (json as Record<string, VerifiedEntry>) : {};
  } catch {
    return {}; // missing or damaged: files are hashed again
  }
}

function unchanged(file: string, e: VerifiedEntry): boolean {
  try {
    const st = fs.statSync(file);
    return st.isFile() && st.size === e.size && st.mtimeMs === e.mtimeMs;
  } catch {
    return false;
  }
}

/** The digest recorded for `file` if it was checked and has not changed since, else undefined. */
export function verifiedSha256(dir: string, file: string): string | undefined {
  const e = readRecord(dir)[path.resolve(file)];
  return e && unchanged(file, e) ? e.sha256 : undefined;
}

/** The file recorded for model URI `uri` if it is still there unchanged, else undefined. */
export function recordedFile(dir: string, uri: string): string | undefined {
  for (const [file, e] of Object.entries(readRecord(dir))) {
    if (e.uri === uri && unchanged(file, e)) return file;
  }
  return undefined;
}

/**
 * Records `file` (atomic rewrite of the record): its digest `sha256` when checked, and the model
 * URI it was downloaded for.
 */
export function recordVerified(dir: string, file: string, sha256: string | undefined, uri?: string): void {
  const st = fs.statSync(file);
  const record = readRecord(dir);
  const old = record[path.resolve(file)];
  record[path.resolve(file)] = { sha256, size: st.size, mtimeMs: st.mtimeMs, uri: uri ?? old?.uri };
  makeFolder(dir);
  const tmp = path.join(dir, `${RECORD}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, JSON.stringify(record, null, 1));
  fs.renameSync(tmp, path.join(dir, RECORD));
}

/**
 * Checks `file` against `expected` (hex SHA-256, any case) unless the record says it already
 * matched; records a match.
 * @throws ChecksumError on a mismatch (the caller decides whether to delete the file).
 */
export async function verifySha256(dir: string, file: string, expected: string, signal?: AbortSignal, onProgress?: (bytes: number) => void, uri?: string): Promise<void> {
  const want = expected.trim().toLowerCase();
  if (verifiedSha256(dir, file) === want) return;
  const got = await sha256File(file, signal, onProgress);
  if (got !== want) {
    throw new ChecksumError(`the SHA-256 of '${file}' is ${got}, expected ${want}`, want, got);
  }
  recordVerified(dir, file, got, uri);
}
