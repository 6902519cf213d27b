/**
 * Resuming a cancelled model download (docs/cli.md: "a cancelled download resumes"; issue 14 section 1)
 * against a throttled local stand-in for the hub (node:http on 127.0.0.1 with byte ranges and the
 * LFS digest in X-Linked-Etag), with a file of 8 of the downloader's chunks.
 *
 * node-llama-cpp downloads through ipull: 3 connections, each fetching a run of 5 MiB chunks,
 * holding a chunk in memory until it is whole, then writing it into `<file>.ipull` and recording
 * it in the progress metadata after the file's bytes. So a resumed download asks only for the
 * chunks that were not whole on disk (each range starts where the bytes on disk end), and the
 * chunks its connections were part way through are fetched again: a download cancelled before
 * any chunk is whole starts over. Both are asserted here, since docs/cli.md states both.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { verifiedSha256 } from '../../src/models/checksum';
import { resolveModel, type DownloadProgress, type ModelDownloader } from '../../src/models/resolve';

/** ipull's chunk (node-llama-cpp passes no chunk size) [bytes]. */
const CHUNK = 5 << 20;
/** ipull's ChunkStatus.COMPLETE in the progress metadata. */
const COMPLETE = 2;
/** The served file: 8 chunks. */
const body = randomBytes(8 * CHUNK);
const digest = createHash('sha256').update(body).digest('hex');
const URI = 'hf:acme/big-GGUF/big.Q4_K_M.gguf';

/** GET requests seen: their Range header's first and last byte (undefined: no Range). */
let gets: { start?: number; end?: number }[] = [];
let server: http.Server;
let endpoint = '';

before(async () => {
  server = http.createServer((req, res) => {
    if (!req.url!.startsWith('/acme/big-GGUF/resolve/main/big.Q4_K_M.gguf')) return void res.writeHead(404).end();
    const headers: Record<string, string | number> = { 'Accept-Ranges': 'bytes', 'X-Linked-Etag': `"${digest}"`, ETag: `"${digest}"`, 'Content-Type': 'application/octet-stream' };
    let start = 0;
    let end = body.length - 1;
    const r = req.headers.range && /^bytes=(\d+)-(\d*)$/.exec(req.headers.range);
    if (r) {
      start = Number(r[1]);
      end = r[2] ? Math.min(end, Number(r[2])) : end;
      headers['Content-Range'] = `bytes ${start}-${end}/${body.length}`;
    }
    headers['Content-Length'] = end - start + 1;
    res.writeHead(r ? 206 : 200, headers);
    if (req.method === 'HEAD') return void res.end();
    gets.push(r ? { start, end } : {});
    // throttled: 64 KiB per connection every 4 ms (~16 MB/s), so a cancel lands part way
    let at = start;
    const pump = () => {
      if (res.destroyed) return;
      if (at > end) return void res.end();
      const next = Math.min(end + 1, at + 65536);
      res.write(body.subarray(at, next));
      at = next;
      setTimeout(pump, 4);
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

/** Downloads `URI` into `dir`, cancelled once `cancelAt` bytes have arrived (in whole or in part). */
async function cancelledDownload(dir: string, cancelAt: number): Promise<void> {
  const controller = new AbortController();
  await assert.rejects(
    resolveModel(URI, {
      directory: dir,
      endpoint,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.phase === 'download' && p.downloadedBytes >= cancelAt) controller.abort();
      },
    }),
    (e: Error) => e.name === 'AbortError',
  );
}

/** The `.ipull` file in `dir` and its progress metadata (undefined when none was written). */
function partial(dir: string): { file: string; chunks: number[]; chunkSize: number } | undefined {
  const name = fs.readdirSync(dir).find((f) => f.endsWith('.ipull'));
  if (!name) return undefined;
  const file = path.join(dir, name);
  const bytes = fs.readFileSync(file);
  if (bytes.length <= body.length) return { file, chunks: [], chunkSize: CHUNK };
  const meta = JSON.parse(bytes.subarray(body.length).toString('utf8')) as { chunks: number[]; chunkSize: number };
  return { file, chunks: meta.chunks, chunkSize: meta.chunkSize };
}

/** Chunk indexes that the ranged GETs since the last reset cover (a range [s, e] covers chunks s/CHUNK … e/CHUNK). */
function chunksRequested(): Set<number> {
  const out = new Set<number>();
  for (const g of gets) {
    if (g.start === undefined) continue;
    for (let c = Math.floor(g.start / CHUNK); c <= Math.floor(g.end! / CHUNK); c++) out.add(c);
  }
  return out;
}

test('a download cancelled part way resumes: the next run asks only for the chunks not whole on disk, from where they end, and the file is right', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-resume-'));
  try {
    gets = [];
    await cancelledDownload(dir, Math.floor(0.55 * body.length));
    const p = partial(dir);
    assert.ok(p, 'the partial download is kept');
    assert.equal(p.chunkSize, CHUNK);
    assert.equal(p.chunks.length, 8);
    const whole = p.chunks.flatMap((s, i) => (s === COMPLETE ? [i] : []));
    assert.ok(whole.length >= 1 && whole.length < 8, `some chunks are whole, not all (${JSON.stringify(p.chunks)})`);
    const onDisk = fs.readFileSync(p.file);
    for (const c of whole) assert.ok(onDisk.subarray(c * CHUNK, (c + 1) * CHUNK).equals(body.subarray(c * CHUNK, (c + 1) * CHUNK)), `chunk ${c} is on disk`);

    gets = [];
    const progress: DownloadProgress[] = [];
    const file = await resolveModel(URI, { directory: dir, endpoint, onProgress: (x) => progress.push(x) });
    assert.equal(createHash('sha256').update(fs.readFileSync(file)).digest('hex'), digest, 'the resumed file has the right SHA-256');
    assert.ok(progress[0]!.downloadedBytes >= whole.length * CHUNK, `the progress resumes from the bytes on disk (first: ${progress[0]!.downloadedBytes})`);
    assert.equal(verifiedSha256(dir, file), digest);

    const requested = chunksRequested();
    const missing = [0, 1, 2, 3, 4, 5, 6, 7].filter((c) => !whole.includes(c));
    assert.deepEqual([...requested].sort((a, b) => a - b), missing, `the second run asks for exactly the chunks not on disk (requests ${JSON.stringify(gets)})`);
    for (const c of whole) {
      if (c + 1 < 8 && !whole.includes(c + 1)) {
        assert.ok(gets.some((g) => g.start === (c + 1) * CHUNK), `a range starts at byte ${(c + 1) * CHUNK}, where whole chunk ${c} ends`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a download cancelled before any chunk is whole keeps nothing, and the next run fetches every chunk', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-resume-'));
  try {
    gets = [];
    await cancelledDownload(dir, 1 << 20);
    const p = partial(dir);
    assert.ok(!p || p.chunks.every((s) => s !== COMPLETE), `no chunk was whole (${JSON.stringify(p?.chunks)})`);

    gets = [];
    const file = await resolveModel(URI, { directory: dir, endpoint });
    assert.equal(createHash('sha256').update(fs.readFileSync(file)).digest('hex'), digest);
    assert.deepEqual([...chunksRequested()].sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the speed of a resumed download counts only the bytes this run fetched, not those already on disk', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-resume-'));
  try {
    const content = Buffer.from('GGUF, resumed');
    const file = path.join(dir, 'm.gguf');
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    // node-llama-cpp's downloader as resolveModel sees it: 600 MB of 1 GB on disk from a cancelled
    // run; this run fetches 20 MB in 2 s, so 10 MB/s (not 620 MB / 2 s = 310 MB/s)
    const fake: ModelDownloader = {
      createModelDownloader: async (o) => ({
        entrypointFilePath: file,
        totalSize: 1e9,
        totalFiles: 1,
        downloadedSize: 600e6,
        download: async () => {
          t.mock.timers.tick(2000);
          o.onProgress?.({ totalSize: 1e9, downloadedSize: 620e6 });
          fs.writeFileSync(file, content);
          return file;
        },
        cancel: async () => {},
      }),
    };
    const progress: DownloadProgress[] = [];
    const sha256 = createHash('sha256').update(content).digest('hex');
    assert.equal(await resolveModel('hf:acme/x-GGUF/m.gguf', { directory: dir, loadDownloader: async () => fake, sha256, onProgress: (p) => progress.push(p) }), file);
    assert.deepEqual(
      progress.filter((p) => p.phase === 'download').map((p) => [p.downloadedBytes, p.totalBytes, p.bytesPerSecond]),
      [[620e6, 1e9, 10e6]],
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
