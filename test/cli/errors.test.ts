/**
 * Bad input to `reposnap`, as a user gives it: an impossible context size is refused before
 * anything is allocated, a GGUF whose metadata llama.cpp would abort on is refused before loading,
 * and with `--json` every error is one JSON object on stderr with a stable `error.code`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel } from '../../src/engine/model';
import { estimateContextBytes } from '../../src/engine/memory';
import { createSession } from '../../src/engine/session';
import { checkContextSize, CLI_OPTION_NAMES, ContextSizeError } from '../../src/pipeline/ask';
import { checkTinyModel } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');
let tmp: string;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-errors-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function reposnap(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, REPOSNAP_CACHE_DIR: path.join(tmp, 'cache') } });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** The one error line of a failed run (no stack). */
function oneLine(r: { code: number | null; stderr: string }): string {
  const lines = r.stderr.trim().split('\n').filter((l) => !l.startsWith('reposnap: cache:'));
  assert.equal(lines.length, 1, `one line expected, got:\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  return lines[0]!;
}

/** A copy of the tiny model with `llama.block_count` (a uint32 right after its key) set to n. */
function withBlockCount(n: number): string {
  const bytes = fs.readFileSync(checkTinyModel());
  const key = Buffer.from('llama.block_count', 'utf8');
  const at = bytes.indexOf(key);
  assert.ok(at > 0);
  assert.equal(bytes.readUInt32LE(at + key.length), 4, 'GGUF type UINT32');
  assert.equal(bytes.readUInt32LE(at + key.length + 4), 5, 'the tiny model has 5 layers');
  bytes.writeUInt32LE(n, at + key.length + 4);
  const file = path.join(tmp, `blocks-${n}.gguf`);
  fs.writeFileSync(file, bytes);
  return file;
}

test('the KV estimate is exact: the engine holds n_layer · n_head_kv · (d_k + d_v) · 2 bytes per f16 cell', async () => {
  const model = await loadModel(checkTinyModel());
  try {
    // stories260K: 5 layers, 4 KV heads of size 8 → 5 · 4 · 16 · 2 = 640 bytes per cell
    const est = estimateContextBytes(model.meta, { contextSize: 2048, kvCacheType: 'f16', flashAttention: true, ubatch: 512, window: 32 });
    assert.equal(est.kv, 2048 * 640);
    assert.equal(est.compute, 32 * 2048 * 8 * 4, 'SnapKV scores [n_kv, w, n_head] F32');
    const s = createSession(model, { contextSize: 2048, snapWindow: 0 });
    try {
      await s.prefill(model.tokenize('Once upon a time there was a cat.', { addSpecial: true }));
      assert.equal(s.stats().kvBytes, s.position * 640, "the engine's own count agrees");
    } finally {
      s.dispose();
    }
    const fa = estimateContextBytes(model.meta, { contextSize: 1000, kvCacheType: 'q8_0', flashAttention: false, ubatch: 512, window: 0 });
    assert.equal(fa.kv, 5 * 1024 * 4 * 16 * (34 / 32), 'cells pad to 256; q8_0 is 34 bytes per 32 values');
    assert.equal(fa.compute, 512 * 1024 * 8 * 4, 'without flash attention: [n_kv, n_ubatch, n_head] F32 scores');

    const check = (contextSize: number, availableBytes: number, force = false) =>
      checkContextSize(model, contextSize, { force, kvCacheType: 'f16', flashAttention: true, window: 32, availableBytes, names: CLI_OPTION_NAMES });
    check(2048, 2048 * 640 + 32 * 2048 * 8 * 4); // exactly enough
    assert.throws(() => check(2048, 2048 * 640 + 32 * 2048 * 8 * 4 - 1), /needs at least .* GiB .* available: lower --context-size/);
    assert.throws(() => check(4096, 1e12), (e: Error) => e instanceof ContextSizeError && /above the model's training context \(2048 tokens\).*--force-context-size/.test(e.message));
    check(4096, 1e12, true);
    assert.throws(() => check(2 ** 31, 1e15, true), /not a number of tokens from 1 to 2147483647/);
  } finally {
    model.dispose();
  }
});

test('an impossible context size is refused at once, with one line (and one JSON object with --json)', () => {
  const model = checkTinyModel();
  const big = reposnap('ask', '--no-cache', '--repo', path.join(ROOT, 'src', 'cli'), '--model', model, '--context-size', '10000000', 'What is here?');
  assert.equal(big.code, 1);
  assert.match(oneLine(big), /^reposnap: error: the context size 10000000 is above the model's training context \(2048 tokens\)/);

  // forced past the training context: 1e9 cells need 640 GB of KV cache alone
  const forced = reposnap('ask', '--no-cache', '--repo', path.join(ROOT, 'src', 'cli'), '--model', model, '--context-size', '1000000000', '--force-context-size', '--json', 'What is here?');
  assert.equal(forced.code, 1);
  const err = JSON.parse(oneLine(forced));
  assert.equal(err.error.code, 'context_size');
  assert.match(err.error.message, /needs at least [\d.]+ GiB .* of memory is available: lower --context-size/);
  const huge = reposnap('ask', '--no-cache', '--repo', path.join(ROOT, 'src', 'cli'), '--model', model, '--context-size', '1e12', '--force-context-size', 'What is here?');
  assert.equal(huge.code, 1);
  assert.match(oneLine(huge), /the context size 1000000000000 is not a number of tokens from 1 to 2147483647/);
});

test('a GGUF whose block_count llama.cpp would abort on is refused before loading, by ask and by pack', () => {
  for (const n of [0, 100000]) {
    const file = withBlockCount(n);
    const r = reposnap('ask', '--no-cache', '--repo', path.join(ROOT, 'src', 'cli'), '--model', file, 'What is here?');
    assert.equal(r.signal, null, `killed by ${r.signal}`);
    assert.equal(r.code, 1, r.stderr);
    assert.match(oneLine(r), new RegExp(`llama\\.block_count is ${n} \\(1 to 512 layers\\)`));
    const p = reposnap('pack', '--repo', path.join(ROOT, 'src', 'cli'), '--model', file, '--json');
    assert.equal(p.code, 1, p.stderr);
    assert.equal(JSON.parse(oneLine(p)).error.code, 'model_load');
  }
  // fewer layers than the file has tensors for
  const r = reposnap('ask', '--no-cache', '--repo', path.join(ROOT, 'src', 'cli'), '--model', withBlockCount(3), 'What is here?');
  assert.equal(r.code, 1);
  assert.match(oneLine(r), /holds tensors of 5 layers but llama\.block_count says 3/);
});

test('a file that only starts like a GGUF is refused from its first 24 bytes, at once (node-llama-cpp ran for minutes on one)', () => {
  const preamble = (version: number, tensors: bigint, keys: bigint) => {
    const b = Buffer.alloc(24);
    b.write('GGUF', 0, 'latin1');
    b.writeUInt32LE(version, 4);
    b.writeBigUInt64LE(tensors, 8);
    b.writeBigUInt64LE(keys, 16);
    return b;
  };
  const cases: [string, Buffer, RegExp][] = [
    ['text.gguf', Buffer.from('not a model at all, just text\n'), /is not a GGUF model file \(it does not start with the bytes 'GGUF'\)/],
    ['garbage.gguf', Buffer.from('GGUF garbage'), /is truncated: 12 bytes, fewer than a GGUF header's first 24/],
    // 'GGUF garbage and more': the version field reads ' gar' = 0x72616720
    ['version.gguf', Buffer.from('GGUF garbage and more bytes'), new RegExp(`is GGUF version ${0x72616720}; llama.cpp reads versions 2 and 3`)],
    ['v1.gguf', Buffer.concat([preamble(1, 0n, 0n), Buffer.alloc(64)]), /is GGUF version 1; llama.cpp reads versions 2 and 3/],
    // 1,000 bytes cannot hold 2^40 tensor entries of >= 24 bytes each
    ['counts.gguf', Buffer.concat([preamble(3, 1n << 40n, 2n), Buffer.alloc(1000)]), /its header announces 1099511627776 tensors and 2 metadata keys, more than a file of 1024 bytes can hold/],
  ];
  for (const [name, bytes, message] of cases) {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, bytes);
    const r = reposnap('ask', '--no-cache', '--repo', path.join(ROOT, 'src', 'cli'), '--model', file, 'What is here?');
    assert.equal(r.signal, null, `${name}: killed by ${r.signal} (the 120 s limit: the header reader ran away)`);
    assert.equal(r.code, 1, `${name}: ${r.stderr}`);
    assert.match(oneLine(r), message, name);
  }
});

test('a GGUF whose metadata or tensor entries announce more than the file holds is refused with the entry, not read (a 2e9-element array aborted V8)', () => {
  const tiny = fs.readFileSync(checkTinyModel());
  // stories260K: GGUF 3, 48 tensors, 19 metadata keys; entry 0 (from byte 24) is tokenizer.ggml.tokens:
  // uint64 key length 21, the key, uint32 ARRAY (9), uint32 element type STRING (8), uint64 count 512
  assert.equal(tiny.readUInt32LE(4), 3);
  assert.equal(tiny.readBigUInt64LE(16), 19n);
  assert.equal(tiny.readBigUInt64LE(24), 21n);
  assert.equal(tiny.toString('latin1', 32, 53), 'tokenizer.ggml.tokens');
  const typeAt = 53;
  assert.deepEqual([tiny.readUInt32LE(typeAt), tiny.readUInt32LE(typeAt + 4), tiny.readBigUInt64LE(typeAt + 8)], [9, 8, 512n]);
  const afterCount = typeAt + 16;
  const left = tiny.length - afterCount;
  const edit = (name: string, f: (b: Buffer) => void) => {
    const b = Buffer.from(tiny);
    f(b);
    const file = path.join(tmp, name);
    fs.writeFileSync(file, b);
    return file;
  };
  const cases: [string, RegExp][] = [
    // 2,000,000,000 uint8 values: node-llama-cpp grew an array until V8 aborted (SIGILL) after 17 s and 1.7 GB
    [
      edit('u8-array.gguf', (b) => {
        b.writeUInt32LE(0, typeAt + 4);
        b.writeBigUInt64LE(2_000_000_000n, typeAt + 8);
      }),
      new RegExp(`metadata entry 0 \\("tokenizer\\.ggml\\.tokens"\\) announces 2000000000 values of 1 byte, more than the ${left} bytes left after byte ${afterCount} \\(an interrupted download\\? fetch it again\\)$`),
    ],
    // 2^40 strings: each takes at least its 8-byte length
    [
      edit('string-array.gguf', (b) => b.writeBigUInt64LE(1n << 40n, typeAt + 8)),
      new RegExp(`"tokenizer\\.ggml\\.tokens"\\) announces 1099511627776 values of at least 8 bytes, more than the ${left} bytes left after byte ${afterCount} \\(an interrupted download\\? fetch it again\\)$`),
    ],
    // the first key's length (bytes 24..32) 2^60
    [
      edit('key-length.gguf', (b) => b.writeBigUInt64LE(1n << 60n, 24)),
      new RegExp(`metadata entry 0's key announces a string of ${1n << 60n} bytes, more than the ${tiny.length - 32} bytes left after byte 32 \\(an interrupted download\\? fetch it again\\)$`),
    ],
    // an array of arrays
    [edit('nested.gguf', (b) => b.writeUInt32LE(9, typeAt + 4)), /"tokenizer\.ggml\.tokens"\) is an array of arrays, which llama\.cpp does not read$/],
    // a tensor entry of 5 dimensions (its uint32 dimension count follows its name)
    [
      edit('dims.gguf', (b) => {
        const name = b.indexOf(Buffer.from('token_embd.weight', 'latin1'));
        assert.equal(b.readBigUInt64LE(name - 8), 17n);
        assert.equal(b.readUInt32LE(name + 17), 2, 'token_embd.weight is 2-D');
        b.writeUInt32LE(5, name + 17);
      }),
      /tensor entry \d+ \("token_embd\.weight"\) has 5 dimensions; ggml has at most 4$/,
    ],
    // an undefined value type
    [edit('type.gguf', (b) => b.writeUInt32LE(99, typeAt)), /metadata entry 0 \("tokenizer\.ggml\.tokens"\) has the value type 99, which GGUF does not define$/],
  ];
  for (const [file, message] of cases) {
    const r = reposnap('ask', '--no-cache', '--repo', path.join(ROOT, 'src', 'cli'), '--model', file, 'What is here?');
    assert.equal(r.signal, null, `${file}: killed by ${r.signal}`);
    assert.equal(r.code, 1, `${file}: ${r.stderr.slice(-400)}`);
    const line = oneLine(r);
    assert.ok(line.startsWith(`reposnap: error: '${file}' is damaged or truncated: `), line);
    assert.match(line, message, file);
  }
});

test("a flag's value that starts with a dash is one usage line (Node's parseArgs says it in three); a negative number gets the flag's range", () => {
  const plain = reposnap('ask', '--no-cache', '--model', checkTinyModel(), '--include', '-x', 'q');
  assert.equal(plain.code, 2);
  assert.deepEqual(plain.stderr.trim().split('\n'), [
    "reposnap: error: Option '--include' argument is ambiguous. Did you forget to specify the option argument for '--include'? To specify an option argument starting with a dash use '--include=-XYZ'.",
    "run 'reposnap --help' for usage",
  ]);
  const negative = reposnap('ask', '--no-cache', '--model', checkTinyModel(), '--max-tokens', '-5', 'q');
  assert.equal(negative.code, 2);
  assert.deepEqual(negative.stderr.trim().split('\n'), ["reposnap: error: --max-tokens must be an integer of at least 1 (got '-5')", "run 'reposnap --help' for usage"]);
  const json = reposnap('ask', '--json', '--no-cache', '--model', checkTinyModel(), '--answer-room', '-5', 'q');
  assert.equal(json.code, 2);
  const obj = JSON.parse(oneLine(json));
  assert.equal(obj.error.code, 'usage');
  assert.equal(obj.error.message, "--answer-room must be an integer of at least 0 (got '-5')");
});

test('--json errors: usage, missing model, bad number, each one object with a stable code', () => {
  const cases: [string[], string, number][] = [
    [['ask', '--json'], 'usage', 2],
    [['ask', '--json', '--model', path.join(tmp, 'nope.gguf'), 'q'], 'usage', 2],
    [['ask', '--json', '--model', checkTinyModel(), '--budget', 'many', 'q'], 'usage', 2],
    [['ask', '--json', '--model', checkTinyModel(), '--repo', path.join(ROOT, 'src', 'cli'), '--no-cache', '--context-size', '4096', 'q'], 'context_size', 1],
  ];
  for (const [args, code, exit] of cases) {
    const r = reposnap(...args);
    assert.equal(r.code, exit, `${args.join(' ')}: ${r.stderr}`);
    const obj = JSON.parse(oneLine(r));
    assert.deepEqual(Object.keys(obj), ['error']);
    assert.equal(obj.error.code, code, args.join(' '));
    assert.equal(typeof obj.error.message, 'string');
  }
  // without --json the same error is plain text
  const plain = reposnap('ask', '--model', checkTinyModel(), '--budget', 'many', 'q');
  assert.match(plain.stderr, /^reposnap: error: --budget must be an integer/);
});
