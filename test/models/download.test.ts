/**
 * Model downloads through node-llama-cpp's real downloader against a local stand-in for the
 * Hugging Face hub (the HTTP API the hub serves: manifests, resolve URLs with LFS digests in
 * X-Linked-Etag, byte ranges), so the whole path runs offline: progress, cancellation, resume,
 * the SHA-256 check and what happens on a corrupted download.
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
import { parseHubUri } from '../../src/models/hub';
import { ModelResolveError, resolveModel, type DownloadProgress } from '../../src/models/resolve';

interface Served {
  /** Bytes served for the file. */
  body: Buffer;
  /** SHA-256 the hub publishes (differs from body's for a corrupted transfer). */
  published: string;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const files = new Map<string, Served>(); // "user/repo/path" -> file
const requests: { method: string; url: string; range?: string }[] = [];
let throttleMs = 0; // delay between 64 KiB chunks at or after byte slowFrom
let slowFrom = 0;
let server: http.Server;
let endpoint = '';

before(async () => {
  server = http.createServer((req, res) => {
    requests.push({ method: req.method!, url: req.url!, range: req.headers.range });
    const url = new URL(req.url!, 'http://x');
    const manifest = /^\/v2\/([^/]+)\/([^/]+)\/manifests\/([^/]+)$/.exec(url.pathname);
    if (manifest) {
      const name = [...files.keys()].find((k) => k.startsWith(`${manifest[1]}/${manifest[2]}/`) && k.includes(manifest[3]!));
      if (!name) return void res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return void res.end(JSON.stringify({ ggufFile: { rfilename: name.split('/').slice(2).join('/') } }));
    }
    const m = /^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    const f = m && files.get(`${m[1]}/${m[2]}/${decodeURIComponent(m[4]!)}`);
    if (!f) return void res.writeHead(404).end();
    const headers: Record<string, string | number> = { 'Accept-Ranges': 'bytes', 'X-Linked-Etag': `"${f.published}"`, ETag: `"${f.published}"`, 'Content-Type': 'application/octet-stream' };
    let start = 0;
    let end = f.body.length - 1;
    const r = req.headers.range && /^bytes=(\d+)-(\d*)$/.exec(req.headers.range);
    if (r) {
      start = Number(r[1]);
      end = r[2] ? Math.min(end, Number(r[2])) : end;
      headers['Content-Range'] = `bytes ${start}-${end}/${f.body.length}`;
    }
    headers['Content-Length'] = end - start + 1;
    res.writeHead(r ? 206 : 200, headers);
    if (req.method === 'HEAD') return void res.end();
    let at = start;
    const pump = () => {
      if (res.destroyed) return;
      if (at > end) return void res.end();
      const next = Math.min(end + 1, at + 65536);
      const ok = res.write(f.body.subarray(at, next));
      at = next;
      if (throttleMs && at >= slowFrom) setTimeout(pump, throttleMs);
      else if (ok) setImmediate(pump);
      else res.once('drain', pump);
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

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-dl-'));
}

test('parseHubUri reads the URI forms node-llama-cpp accepts', () => {
  assert.deepEqual(parseHubUri('hf:u/r/dir/m.Q8_0.gguf#dev'), { user: 'u', repo: 'r', branch: 'dev', file: 'dir/m.Q8_0.gguf' });
  assert.deepEqual(parseHubUri('hf:u/r:Q4_K_M'), { user: 'u', repo: 'r', branch: 'main', tag: 'Q4_K_M' });
  assert.deepEqual(parseHubUri('hf:u/r'), { user: 'u', repo: 'r', branch: 'main', tag: 'latest' });
  assert.deepEqual(parseHubUri('https://huggingface.co/u/r/resolve/main/a%20b.gguf?download=true'), { user: 'u', repo: 'r', branch: 'main', file: 'a b.gguf' });
  assert.equal(parseHubUri('https://example.com/models/m.gguf'), undefined);
});

test('an hf: file URI downloads with progress, is checked against the hub digest, and is not fetched again', async () => {
  const body = randomBytes(3 << 20);
  files.set('acme/tiny-GGUF/tiny.Q8_0.gguf', { body, published: sha(body) });
  const dir = tmpDir();
  try {
    const progress: DownloadProgress[] = [];
    const warnings: string[] = [];
    const file = await resolveModel('hf:acme/tiny-GGUF/tiny.Q8_0.gguf', { directory: dir, endpoint, onProgress: (p) => progress.push(p), onWarning: (w) => warnings.push(w) });
    assert.ok(fs.readFileSync(file).equals(body), 'the downloaded file has the served bytes');
    assert.deepEqual(warnings, []);
    const dl = progress.filter((p) => p.phase === 'download');
    assert.ok(dl.length > 0 && dl.at(-1)!.downloadedBytes === body.length && dl.at(-1)!.totalBytes === body.length);
    assert.equal(progress.at(-1)!.phase, 'verify');
    assert.equal(progress.at(-1)!.downloadedBytes, body.length);
    assert.equal(verifiedSha256(dir, file), sha(body), 'the check is recorded');
    assert.ok(requests.some((r) => r.method === 'HEAD' && r.url === '/acme/tiny-GGUF/resolve/main/tiny.Q8_0.gguf'), 'the digest came from a HEAD of the resolve URL');

    // second resolve: the file is found and its record is current, so nothing is downloaded or hashed
    requests.length = 0;
    const again: DownloadProgress[] = [];
    assert.equal(await resolveModel('hf:acme/tiny-GGUF/tiny.Q8_0.gguf', { directory: dir, endpoint, onProgress: (p) => again.push(p) }), file);
    assert.deepEqual(again, []);
    assert.equal(requests.filter((r) => r.method === 'GET').length, 0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a quantization tag resolves through the manifest API', async () => {
  const body = randomBytes(1 << 20);
  files.set('acme/coder-GGUF/coder-Q4_K_M.gguf', { body, published: sha(body) });
  const dir = tmpDir();
  try {
    requests.length = 0;
    const file = await resolveModel('hf:acme/coder-GGUF:Q4_K_M', { directory: dir, endpoint });
    assert.ok(fs.readFileSync(file).equals(body));
    assert.ok(requests.some((r) => r.url === '/v2/acme/coder-GGUF/manifests/Q4_K_M'));
    assert.equal(verifiedSha256(dir, file), sha(body));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a corrupted download is deleted with a clear error; a local file with a wrong digest is kept and refused', async () => {
  const body = randomBytes(1 << 20);
  files.set('acme/bad-GGUF/bad.gguf', { body, published: sha(Buffer.from('something else')) });
  const dir = tmpDir();
  try {
    await assert.rejects(
      resolveModel('hf:acme/bad-GGUF/bad.gguf', { directory: dir, endpoint }),
      (e: Error) => e instanceof ModelResolveError && /corrupted/.test(e.message) && e.message.includes(sha(body)),
    );
    assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.gguf')), [], 'the bad download is gone');

    const local = path.join(dir, 'mine.gguf');
    fs.writeFileSync(local, body);
    await assert.rejects(resolveModel(local, { directory: dir, sha256: '0'.repeat(64) }), /does not match the expected SHA-256/);
    assert.ok(fs.existsSync(local), "a user's own file is never deleted");
    assert.equal(await resolveModel(local, { directory: dir, sha256: sha(body).toUpperCase() }), local);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a cancelled download stops, and the next attempt resumes with a byte range', async () => {
  // ipull fetches 5 MiB chunks over parallel connections and keeps whole chunks only: the
  // first two chunks come at full speed, the rest at ~1 MB/s, and the download is cancelled then
  const body = randomBytes(15 << 20);
  files.set('acme/slow-GGUF/slow.gguf', { body, published: sha(body) });
  const dir = tmpDir();
  throttleMs = 50;
  slowFrom = 10 << 20;
  try {
    const controller = new AbortController();
    let seen = 0;
    await assert.rejects(
      resolveModel('hf:acme/slow-GGUF/slow.gguf', {
        directory: dir,
        endpoint,
        signal: controller.signal,
        onProgress: (p) => {
          seen = p.downloadedBytes;
          if (p.downloadedBytes > (10 << 20) + (1 << 19)) controller.abort();
        },
      }),
    );
    assert.ok(seen > 0 && seen < body.length, `stopped part way (${seen} of ${body.length})`);
    const partial = fs.readdirSync(dir).filter((f) => f.endsWith('.ipull'));
    assert.equal(partial.length, 1, 'the partial download is kept for resuming');
    throttleMs = 0;
    requests.length = 0;
    const file = await resolveModel('hf:acme/slow-GGUF/slow.gguf', { directory: dir, endpoint });
    assert.ok(fs.readFileSync(file).equals(body), 'the resumed file is whole and correct');
    const starts = requests.filter((r) => r.method === 'GET' && r.range).map((r) => Number(/^bytes=(\d+)-/.exec(r.range!)![1]));
    assert.ok(starts.length > 0 && Math.min(...starts) >= 10 << 20, `resumed from a chunk boundary, not from 0 (requests: ${JSON.stringify(requests)})`);
  } finally {
    throttleMs = 0;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a file without a published digest is kept with a warning and found again without the network', async () => {
  const body = randomBytes(1 << 20);
  files.set('acme/plain-GGUF/plain.gguf', { body, published: 'not-an-lfs-file' });
  const dir = tmpDir();
  try {
    const warnings: string[] = [];
    const file = await resolveModel('hf:acme/plain-GGUF/plain.gguf', { directory: dir, endpoint, onWarning: (w) => warnings.push(w) });
    assert.ok(fs.readFileSync(file).equals(body));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /not checked: no SHA-256 is published/);
    assert.equal(verifiedSha256(dir, file), undefined);
    requests.length = 0;
    const noDownloader = async () => {
      throw new Error('the recorded file must be used');
    };
    assert.equal(await resolveModel('hf:acme/plain-GGUF/plain.gguf', { directory: dir, endpoint, loadDownloader: noDownloader }), file);
    assert.equal(requests.length, 0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a local path never touches the network or node-llama-cpp', async () => {
  const dir = tmpDir();
  try {
    const file = path.join(dir, 'm.gguf');
    fs.writeFileSync(file, 'GGUF');
    requests.length = 0;
    const noDownloader = async () => {
      throw new Error('node-llama-cpp must not be loaded for a local path');
    };
    assert.equal(await resolveModel(file, { directory: dir, endpoint, loadDownloader: noDownloader, sha256: sha(Buffer.from('GGUF')) }), file);
    assert.equal(requests.length, 0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
