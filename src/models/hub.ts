/**
 * What the Hugging Face hub says about a model file, for checking a download: the hub serves
 * every GGUF through Git LFS, and a `HEAD` of the file's `resolve` URL answers with the LFS
 * object id, which is the SHA-256 of the file, in `X-Linked-Etag` (the `Etag` of the file that
 * the redirect points to). node-llama-cpp downloads the file but does not check its content;
 * this module finds the digest to check it against.
 *
 * URI forms (node-llama-cpp's, see its `parseModelUri`): `hf:user/repo/path/file.gguf[#branch]`
 * and `hf:user/repo:quant` (resolved with the hub's manifest API, the same request llama.cpp's
 * `-hf` option makes), plus `https://<hub>/user/repo/resolve/<branch>/<path>` URLs.
 * The hub is `endpoint`, else `$MODEL_ENDPOINT`, else `$HF_ENDPOINT`, else huggingface.co,
 * which is the order node-llama-cpp uses (`resolveHuggingFaceEndpoint`).
 */

/** The hub's base URL with a trailing slash. */
export function hubEndpoint(endpoint?: string): string {
  const e = endpoint || process.env.MODEL_ENDPOINT || process.env.HF_ENDPOINT || 'https://huggingface.co/';
  return e.endsWith('/') ? e : `${e}/`;
}

/** A file on the hub, or a quantization tag still to be resolved to one. */
export interface HubRef {
  user: string;
  repo: string;
  branch: string;
  /** Path of the file in the repository (undefined while only `tag` is known). */
  file?: string;
  /** Quantization tag of `hf:user/repo:tag` (e.g. `Q4_K_M`). */
  tag?: string;
}

/**
 * Parses a model URI that names a file on the hub.
 * @returns undefined for a URI that is not on the hub (another https server).
 */
export function parseHubUri(uri: string, endpoint?: string): HubRef | undefined {
  const s = uri.trim();
  const m = /^(?:hf|huggingface):(.+)$/i.exec(s);
  if (m) {
    let rest = m[1]!;
    let branch = 'main';
    const hash = rest.indexOf('#');
    if (hash >= 0) {
      branch = rest.slice(hash + 1) || 'main';
      rest = rest.slice(0, hash);
    }
    const [user, repoAndTag, ...file] = rest.split('/');
    if (!user || !repoAndTag) return undefined;
    if (file.length === 0) {
      const [repo, tag] = repoAndTag.split(':');
      return { user, repo: repo!, branch, tag: tag || 'latest' };
    }
    return { user, repo: repoAndTag, branch, file: file.join('/') };
  }
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    return undefined;
  }
  const base = new URL(hubEndpoint(endpoint));
  const onHub = url.host === base.host || url.hostname === 'huggingface.co' || url.hostname === 'hf.co';
  const parts = url.pathname.slice(base.pathname.length - 1).split('/').filter(Boolean).map(decodeURIComponent);
  if (!onHub || parts.length < 5 || (parts[2] !== 'resolve' && parts[2] !== 'blob')) return undefined;
  return { user: parts[0]!, repo: parts[1]!, branch: parts[3]!, file: parts.slice(4).join('/') };
}

/** The forms of an `hf:` URI, for messages. */
export const HUB_URI_FORMS = 'hf:<user>/<repo>:<quant> (e.g. hf:bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M) or hf:<user>/<repo>/<file>.gguf';

/** A hub user or repository name: letters, digits, `-`, `_`, `.` (the hub's own rule). */
const HUB_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * What is wrong with the form of a model URI, before anything is fetched: an `hf:` URI must be
 * `hf:<user>/<repo>:<quant>` or `hf:<user>/<repo>/<path>.gguf`, with hub names (no spaces), an
 * `https://` URL must parse as a URL.
 * @returns one sentence naming the URI (JSON-quoted) and the forms expected, or undefined when
 *   the form is fine (the hub may still not know it).
 */
export function malformedModelUri(uri: string): string | undefined {
  const s = uri.trim();
  const bad = (why: string) => `The model URI ${JSON.stringify(s)} is malformed (${why}): expected ${HUB_URI_FORMS}, an https:// URL of a .gguf file, or a local .gguf file.`;
  if (/^https?:\/\//i.test(s)) {
    try {
      new URL(s);
      return undefined;
    } catch {
      return bad('not a URL');
    }
  }
  const m = /^(?:hf|huggingface):(.*)$/i.exec(s);
  if (!m) return undefined;
  if (/\s/.test(m[1]!)) return bad('it holds whitespace');
  const ref = parseHubUri(s);
  if (!ref) return bad('it names no <user>/<repo>');
  if (!HUB_NAME.test(ref.user) || !HUB_NAME.test(ref.repo)) return bad(`'${ref.user}/${ref.repo}' is not a hub repository name`);
  if (ref.file !== undefined && !/\.gguf$/i.test(ref.file)) return bad(`'${ref.file}' is not a .gguf file`);
  if (ref.tag !== undefined && !/^[A-Za-z0-9._-]+$/.test(ref.tag)) return bad(`'${ref.tag}' is not a quantization tag`);
  return undefined;
}

/** `fetch` as the hub lookups use it (injectable for tests). */
export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/** Options of {@link hubSha256}. */
export interface HubLookupOptions {
  endpoint?: string;
  signal?: AbortSignal;
  fetch?: Fetch;
}

const SHA256 = /^[0-9a-f]{64}$/;

/** The path of the GGUF file a quantization tag stands for (`GET v2/<user>/<repo>/manifests/<tag>`). */
async function resolveTag(ref: HubRef, o: HubLookupOptions): Promise<string> {
  const url = `${hubEndpoint(o.endpoint)}v2/${encodeURIComponent(ref.user)}/${encodeURIComponent(ref.repo)}/manifests/${encodeURIComponent(ref.tag!)}`;
  // the hub adds `ggufFile` to the manifest for llama.cpp's user agent
  const res = await (o.fetch ?? fetch)(url, { headers: { 'User-Agent': 'llama-cpp', Accept: 'application/json' }, signal: o.signal });
  if (!res.ok) throw new Error(`the hub's manifest for ${ref.user}/${ref.repo}:${ref.tag} answered ${res.status}`);
  const json = (await res.json()) as { ggufFile?: { rfilename?: string } };
  if (!json.ggufFile?.rfilename) throw new Error(`the hub's manifest for ${ref.user}/${ref.repo}:${ref.tag} names no GGUF file`);
  return json.ggufFile.rfilename;
}

/**
 * The SHA-256 that the hub gives for a model file: the LFS object id in `X-Linked-Etag` of a
 * `HEAD` of its resolve URL, without following the redirect.
 * @returns the lowercase hex digest, or undefined when the hub gives none (a file not in LFS).
 * @throws Error when the hub cannot be reached or does not know the file.
 */
export async function hubSha256(ref: HubRef, o: HubLookupOptions = {}): Promise<string | undefined> {
  const file = ref.file ?? (await resolveTag(ref, o));
  const url = `${hubEndpoint(o.endpoint)}${encodeURIComponent(ref.user)}/${encodeURIComponent(ref.repo)}/resolve/${encodeURIComponent(ref.branch)}/${file.split('/').map(encodeURIComponent).join('/')}`;
  const res = await (o.fetch ?? fetch)(url, { method: 'HEAD', redirect: 'manual', signal: o.signal });
  if (res.status >= 400) throw new Error(`the hub answered ${res.status} for ${ref.user}/${ref.repo}/${file}`);
  for (const h of ['x-linked-etag', 'etag']) {
    const v = res.headers.get(h)?.replace(/^W\//, '').replace(/"/g, '').trim().toLowerCase();
    if (v && SHA256.test(v)) return v;
  }
  return undefined;
}
