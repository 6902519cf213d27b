/**
 * Private key blocks of every kind: any `-----BEGIN … PRIVATE KEY…-----` armor line (PEM's PKCS#1
 * `RSA`, SEC1 `EC`, `DSA`, PKCS#8 plain or `ENCRYPTED`, `OPENSSH`, and OpenPGP's `PGP PRIVATE KEY
 * BLOCK`) followed by a key body, wherever it sits: at the start of a line or indented (a Helm
 * `values.yaml`), in a template string of code, or one JSON string with `\n` escapes.
 *
 * secretlint's `privatekey` rule (preset 12.0.0) accepts a body only when it has at least 100
 * base64 characters starting with `MI` (ASN.1, most PEM keys) or `b3BlbnNzaC1rZXktdjE` (OpenSSH),
 * and only unindented: an Ed25519 or X25519 PKCS#8 key (64 characters, `MC…`), a small SEC1 key
 * (`MH…`) and PGP armor (`lQ…`/`lF…` after armor headers and a blank line, RFC 4880 §6.2) pass it
 * by (issue 29). Here the armor line alone decides the kind; the body only has to be present,
 * so that code that *builds* or *parses* a PEM (`"-----BEGIN PRIVATE KEY-----\n" + body`, a
 * regular expression, a placeholder `MIIE...`) is not a key.
 */

/** An armor line that opens a private key (RFC 7468 labels, OpenSSH's, RFC 4880's `PGP PRIVATE KEY BLOCK`). */
const PRIVATE_KEY_BEGIN = /-----BEGIN ?(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/g;

/**
 * Least base64 characters of a key body [characters]. The smallest private keys are 64
 * (Ed25519 and X25519 in PKCS#8: 48 bytes of DER); a placeholder (`MIIE...`, `<key>`, `xxxx`)
 * has far fewer in an unbroken run.
 */
export const MIN_KEY_BODY_CHARS = 48;

/** Least distinct characters in a key body: keeps `AAAA…` or `xxxx…` fillers out. */
const MIN_KEY_BODY_DISTINCT = 12;

/** How far after the armor line a body is looked for [characters] (a 16384-bit RSA key is ~12 K). */
const MAX_KEY_SPAN = 20_000;

/** One private key block found by `findPrivateKeyBlocks`: the armor line's start and the body's end. */
export interface PrivateKeyBlock {
  /** Offset of the `-----BEGIN` (UTF-16 code units). */
  start: number;
  /** Offset just past the block: past its `-----END …-----` line, or past the body when there is none. */
  end: number;
  /** The armor label, `'EC PRIVATE KEY'`, `'PGP PRIVATE KEY BLOCK'`, … */
  label: string;
}

/**
 * The lines of a block's body as written in code or configuration: split at real line breaks and
 * at `\n` / `\r\n` escapes of a string literal, each stripped of the indentation, quotes, string
 * concatenation (`+`), commas, trailing backslashes and comment leaders (`#`, `//`, `*`) around it.
 */
function bodyLines(text: string): string[] {
  return text.split(/\r?\n|\\r\\n|\\n/).map((line) =>
    line
      .replace(/^[\s"'`+,#*/|>]*/, '')
      .replace(/[\s"'`+,;\\)]*$/, ''),
  );
}

/**
 * Every private key block in `text`, in text order (see the module comment). A block counts when,
 * after its armor line, optional armor headers (`Proc-Type: …`, `DEK-Info: …`, PGP's `Version: …`,
 * `Comment: …`) and blank lines, an unbroken run of base64 lines holds at least
 * `MIN_KEY_BODY_CHARS` characters, `MIN_KEY_BODY_DISTINCT` of them distinct. Pure; linear in the
 * text (each block looks at most `MAX_KEY_SPAN` characters ahead).
 */
export function findPrivateKeyBlocks(text: string): PrivateKeyBlock[] {
  const blocks: PrivateKeyBlock[] = [];
  for (const match of text.matchAll(PRIVATE_KEY_BEGIN)) {
    const start = match.index ?? 0;
    const after = start + match[0].length;
    const window = text.slice(after, after + MAX_KEY_SPAN);
    const endMatch = /-----END ?(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/.exec(window);
    const bodyText = endMatch === null ? window : window.slice(0, endMatch.index);
    let body = '';
    let headers = true;
    for (const line of bodyLines(bodyText)) {
      if (line === '') {
        if (body !== '') break;
        continue;
      }
      if (headers && body === '' && /^[A-Za-z][A-Za-z0-9-]*: /.test(line)) continue;
      headers = false;
      // a PGP armor checksum (`=AbCd`) ends the body
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(line)) break;
      body += line;
    }
    if (body.length < MIN_KEY_BODY_CHARS || new Set(body).size < MIN_KEY_BODY_DISTINCT) continue;
    const end = endMatch === null ? after + Math.min(window.length, bodyText.length) : after + endMatch.index + endMatch[0].length;
    blocks.push({ start, end, label: match[0].replace(/^-----BEGIN ?|-----$/g, '') });
  }
  return blocks;
}
