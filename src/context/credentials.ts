/**
 * Generic credential assignments: a credential-named key (`DB_PASSWORD`, `apiKey`,
 * `client_secret`, `"access-token"`, `<password>`) given a literal value that is not a
 * placeholder, in any language or config format. The token formats of secretlint's preset
 * (secrets.ts) are recognisable by their value alone; a password or a provider's opaque key is
 * only recognisable by the name it is assigned to.
 *
 * Sources of the patterns, ported rather than used because neither runs in-process from npm
 * (gitleaks is a Go binary, detect-secrets a Python package; secretlint has no generic rule,
 * and its `secretlint-rule-pattern` takes bare regular expressions without the placeholder
 * and entropy checks below):
 * - the key: Yelp detect-secrets' `KeywordDetector` (`detect_secrets/plugins/keyword.py`:
 *   its DENYLIST of names such as `password`, `passwd`, `pwd`, `secret`, `api_key`,
 *   `private_key`, `token`, and its assignment forms `k = "v"`, `k: v`, `k := "v"`,
 *   `k == "v"`, `k[] = @"v"`), narrowed as gitleaks' `generic-api-key` allowlist narrows
 *   its keywords (`cmd/generate/config/rules/generic.go`: `public_key`, `csrf_token`,
 *   `key_name`, `secret_length`, … are not credentials). Here a key is a credential when
 *   its last word is one (`DB_PASSWORD`, `webhookSecret`) or its last two words are a
 *   credential key (`API_KEY`, `privateKey`), so `passwordField`, `tokenType` and
 *   `secret_name` are not;
 * - the value: gitleaks' `generic-api-key` (at least 3.5 bits of Shannon entropy per
 *   character, a value of only letters, `_`, `.` and `-` is an identifier, not a key) and
 *   detect-secrets' FALSE_POSITIVES (`none`, `null`, `changeme`, `<password>`, `dummy`,
 *   `redacted`, …), with templates (`${DB_PASSWORD}`, `{{ .Values.x }}`, `%(pw)s`, `$PW`)
 *   and references (`process.env.X`, `settings.db.password`) left out. The entropy bound
 *   is lowered to `MIN_ENTROPY_BITS` (3.0) so that a 10–12-character password such as a
 *   human's `hunter2-Xq9!` is caught (3.5 bits per character needs at least 12 distinct
 *   characters); the corpus counts are in `bench/results/secrets-generic.json`.
 *
 * Values are literals only: quoted strings (with `r`/`b`/`u`/`f` prefixes, `@` of
 * Objective-C), a bare word to the end of the line (`.env`, YAML, INI, properties, shell,
 * Dockerfile `ENV`; a trailing comment allowed), an XML element's text, `Bearer`/`Basic`
 * credentials after `Authorization`, and the `value` of a name/value pair named by the key
 * (Kubernetes and Compose `env` entries, ECS task definitions). A call, an expression, a reference or a comparison with
 * another variable is never a value.
 */

/** A value assigned to a credential-named key, found by `findCredentialAssignments`. */
export interface CredentialAssignment {
  /** Offset of the value's first character in the text (UTF-16 code units), after any `Bearer ` prefix. */
  start: number;
  /** Offset just past the value's last character. */
  end: number;
  /** The key as written (`DB_PASSWORD`, `config.apiKey`), without quotes. */
  key: string;
}

/** Shortest value reported [characters]: shorter literals are not told apart from ordinary words. */
export const MIN_VALUE_CHARS = 8;

/** Longest value examined [characters]; a longer literal is text, not a credential. */
export const MAX_VALUE_CHARS = 400;

/**
 * Least Shannon entropy of a reported value [bits per character], over its characters'
 * frequencies (`shannonEntropy`). gitleaks' generic rule uses 3.5; see the module comment.
 */
export const MIN_ENTROPY_BITS = 3.0;

/** Last words that name a credential on their own (`DB_PASSWORD`, `clientSecret`, `apikey`). */
const CREDENTIAL_WORDS: ReadonlySet<string> = new Set([
  'password', 'passwd', 'pwd', 'pass', 'passphrase', 'passcode', 'secret', 'token', 'credential', 'credentials',
  'authorization', 'apikey', 'apisecret', 'privatekey', 'secretkey', 'accesskey', 'authkey', 'authtoken', 'accesstoken',
  'clientsecret', 'contrasena', 'contraseña',
]);

/** Words that make a final `key` a credential key (`API_KEY`, `privateKey`, `signing-key`). */
const KEY_QUALIFIERS: ReadonlySet<string> = new Set([
  'api', 'private', 'secret', 'access', 'auth', 'signing', 'encryption', 'master', 'client', 'app', 'application',
  'account', 'service', 'db', 'database', 'session', 'jwt', 'hmac', 'webhook',
]);

/** Words before the last that make a credential word something else (gitleaks' allowlist): `public_key`, `csrf_token`, `next_page_token`. */
const NOT_CREDENTIAL_QUALIFIERS: ReadonlySet<string> = new Set([
  'public', 'pub', 'csrf', 'xsrf', 'page', 'next', 'prev', 'previous', 'continuation', 'cancellation', 'cancel', 'sync', 'cursor', 'pagination',
]);

/** Words anywhere in a key that mark a stand-in (`FAKE_TOKEN`, `exampleApiKey`, `mock_password`). */
const STAND_IN_WORDS: ReadonlySet<string> = new Set(['example', 'sample', 'dummy', 'fake', 'mock', 'placeholder']);

/**
 * Substrings (lower case) that make a value a placeholder: detect-secrets' FALSE_POSITIVES,
 * the usual documentation stand-ins (`your-api-key-here`, `changeme`, `xxxxxxxx`, `<redacted>`,
 * `abc123`), and a credential word in the value itself (`SecurePassword123!`,
 * `[type=password]`, `my-secret-value`): in code these are test and documentation values. A
 * real password that contains `password` is missed; the measured corpora hold no other kind.
 */
const PLACEHOLDER_PARTS: readonly string[] = [
  'example', 'sample', 'placeholder', 'dummy', 'fake', 'mock', 'changeme', 'change_me', 'change-me', 'changeit', 'redacted',
  'replace', 'your', 'insert', 'xxxx', '****', '....', '<', '>', 'todo', 'fixme', 'notreal', 'not_real', 'not-real',
  'abc123', '123456', 'qwerty', 'password', 'passwd', 'secret',
];

/**
 * Finds the keyword of a credential key (or part of it: the whole key around it is read
 * back). Case-insensitive; a final `key` only after a qualifier of `KEY_QUALIFIERS`.
 */
const KEYWORD = /passw(?:or)?d|pwd|pass|secret|token|credential|authorization|contrase[nñ]a|(?:api|private|access|auth|signing|encryption|master|client|app(?:lication)?|account|service|db|database|session|jwt|hmac|webhook)[_.-]?key/giu;

/** Characters of a key: identifiers, dotted paths, kebab-case and PHP's `$`. */
const KEY_CHAR = /[\p{L}\p{N}_.$-]/u;

/**
 * What follows a key, at the key's end (sticky): an optional closing quote (a quoted key),
 * an optional `[]`, an optional type annotation (`: str =`, `: string =`), the operator, and
 * the value. Groups: 1 closing quote, 2 operator, 3–5 quoted value ("…", '…', `…`), 6 an
 * `Authorization` credential after `Bearer`/`Basic`/`Token`, 7 a bare value that ends the line.
 */
const TAIL = new RegExp(
  [
    String.raw`(["'\x60]?)[ \t]*(?:\[\])?[ \t]*`,
    String.raw`(?::[ \t]*[A-Za-z_][\w.<>\[\]|?, ]{0,60}?[ \t]*(?=[:=]=?))?`,
    // the operator; C's `#define NAME "value"` has none
    String.raw`(:=|=>|===?|!==?|=|:(?!:)|,|(?<=^[ \t]*#[ \t]*define[ \t]+\w+[ \t]+)(?=["']))[ \t]*`,
    String.raw`(?:@|\b[rRbBuUfF]{1,2}(?=["']))?`,
    '(?:',
    String.raw`"((?:[^"\\\n]|\\.){0,${MAX_VALUE_CHARS}})"`,
    String.raw`|'((?:[^'\\\n]|\\.){0,${MAX_VALUE_CHARS}})'`,
    String.raw`|\x60([^\x60\\\n$]{0,${MAX_VALUE_CHARS}})\x60`,
    String.raw`|(?:["']?(?:Bearer|Basic|Token)[ \t]+)([A-Za-z0-9._~+\/=-]{${MIN_VALUE_CHARS},${MAX_VALUE_CHARS}})`,
    String.raw`|([^\s"'\x60,;(){}\[\]<>]{1,${MAX_VALUE_CHARS}})(?=[ \t]*(?:[#;].*|\/\/.*)?\r?$)`,
    ')',
  ].join(''),
  'my',
);

/** An XML element holding a value, at the key's end (sticky, after `<key`): group 1 the text. */
const XML_TAIL = new RegExp(String.raw`>[ \t]*([^<\s]{${MIN_VALUE_CHARS},${MAX_VALUE_CHARS}})[ \t]*</`, 'y');

/**
 * A name/value pair whose name is the key, after it (sticky, at the key's end): Kubernetes and
 * Compose `env` entries (`- name: DB_PASSWORD` then `  value: …` on the next line) and JSON ones
 * (ECS task definitions: `{"name": "DB_PASSWORD", "value": "…"}`). Groups: 1 "…", 2 '…', 3 bare
 * (to the end of the line).
 */
const NAME_VALUE_TAIL = new RegExp(
  String.raw`["']?[ 	]*(?:
?
[ 	]*(?:-[ 	]+)?|,[ 	]*)["']?value["']?[ 	]*:[ 	]*` +
    String.raw`(?:"([^"\
]{0,${MAX_VALUE_CHARS}})"|'([^'\
]{0,${MAX_VALUE_CHARS}})'|([^\s"'#,{}\[\]]{1,${MAX_VALUE_CHARS}})(?=[ 	]*(?:#.*)?
?$))`,
  'y',
);

/** What precedes the key of a name/value pair on its line: `name:` in YAML, `"name":` in JSON (the key's own quote excluded). */
const NAME_BEFORE = /["']?name["']?[ 	]*:[ 	]*["']?$/;

/** `Bearer`, `Basic` or `Token` and a space at the start of a quoted value (an Authorization header's). */
const AUTH_SCHEME = /^(?:Bearer|Basic|Token)[ \t]+/;

/** A reference, not a literal: an identifier or a member chain (`confirm`, `settings.db.password`, `match.groups?.password`). */
const REFERENCE = /^[\p{L}_$][\p{L}\p{N}_$]*(?:[?!]?\.[\p{L}_$][\p{L}\p{N}_$]*)*$/u;

/**
 * The words of a key, lower case, trailing digits dropped: camelCase, PascalCase, snake_case,
 * kebab-case and dotted paths split (`DBPassword` → `db password`, `config.apiKey2` →
 * `config api key`).
 */
export function keyWords(key: string): string[] {
  return key
    .replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu}+)(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .map((w) => w.replace(/\d+$/, ''))
    .filter((w) => w !== '');
}

/**
 * Whether `key` names a credential: its last word is one of `CREDENTIAL_WORDS`, or its last
 * two are a `KEY_QUALIFIERS` word and `key`; and the word before is not one of
 * `NOT_CREDENTIAL_QUALIFIERS` and no word marks a stand-in (`STAND_IN_WORDS`).
 */
export function isCredentialKey(key: string): boolean {
  const words = keyWords(key);
  const last = words[words.length - 1];
  if (last === undefined) return false;
  const before = words[words.length - 2];
  const named = CREDENTIAL_WORDS.has(last) || (last === 'key' && before !== undefined && KEY_QUALIFIERS.has(before));
  if (!named) return false;
  const qualifier = last === 'key' ? words[words.length - 3] : before;
  if (qualifier !== undefined && NOT_CREDENTIAL_QUALIFIERS.has(qualifier)) return false;
  return !words.some((w) => STAND_IN_WORDS.has(w));
}

/** Shannon entropy of `text` over its characters' (code points') frequencies [bits per character]; 0 for `''`. */
export function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  let n = 0;
  for (const ch of text) {
    counts.set(ch, (counts.get(ch) ?? 0) + 1);
    n++;
  }
  let bits = 0;
  for (const c of counts.values()) bits -= (c / n) * Math.log2(c / n);
  return bits;
}

/**
 * Whether `value` (a literal assigned to a credential key, unquoted) is a placeholder or not
 * a credential: shorter than `MIN_VALUE_CHARS`, holding whitespace or a quote (a quoted string
 * inside another, as Markdown quotes code), a template (`${…}`,
 * `{{…}}`, `%(…)s`, `%s`, `$VAR`, `%VAR%`, `{api_key}` of an f-string or format), a path
 * (`/etc/x`, `./keys`, `~/.ssh`, `C:\\x`, `src/cache/token.ts`) or URL, a number, only letters with `_ . -`
 * (an identifier or a word, as gitleaks' allowlist), a reference when `bare` (an unquoted
 * identifier or member chain), a call (`Ident(3)`), one of `PLACEHOLDER_PARTS`, or below `MIN_ENTROPY_BITS`.
 */
export function isPlaceholderValue(value: string, bare: boolean): boolean {
  if (value.length < MIN_VALUE_CHARS || value.length > MAX_VALUE_CHARS) return true;
  if (/[\s"'\x60]/.test(value)) return true;
  if (/\$\{|\{\{|%\(|%[sdr]|#\{|^\$|^%.*%$|\{[\w.[\]'"()-]*\}/.test(value)) return true;
  if (/^(?:\.{0,2}\/|~\/|[A-Za-z]:\\)|:\/\/|^[\w.-]+(?:\/[\w.-]+)+\.[A-Za-z]\w{0,4}$/.test(value)) return true;
  if (/^[-+]?(?:0[xX][0-9a-fA-F]+|\d[\d_,.]*(?:[eE][-+]?\d+)?)[uUlLfF]*$/.test(value)) return true;
  if (/^[\p{L}_.-]+$/u.test(value)) return true;
  if (bare && REFERENCE.test(value)) return true;
  // code quoted as text: a call such as `Ident(3)` or `getToken(user)` (a token kind's name, a template's expression)
  if (/^[\p{L}_$][\p{L}\p{N}_$.]*\([^()]*\)$/u.test(value)) return true;
  const lower = value.toLowerCase();
  if (PLACEHOLDER_PARTS.some((p) => lower.includes(p))) return true;
  return shannonEntropy(value) < MIN_ENTROPY_BITS;
}

/**
 * Every credential assignment in `text` (a file's content), in text order: a key that
 * `isCredentialKey` accepts, then an operator (`=`, `:`, `:=`, `=>`, `==`/`!=` with a quoted
 * value, `,` between a key and a value both in `'` or `"` quotes as in `define('DB_PASSWORD', '…')` or
 * `getenv("API_KEY", "…")`) or an XML element (`<password>…</password>`), then a literal
 * value that `isPlaceholderValue` rejects. The ranges cover the values, never the keys. Pure;
 * 5.1–9.7 ms per MB of source at load 2.9, 6.6–13.7 at load 7.7 (bench/secrets).
 */
export function findCredentialAssignments(text: string): CredentialAssignment[] {
  const found: CredentialAssignment[] = [];
  KEYWORD.lastIndex = 0;
  let scannedTo = 0;
  for (let hit = KEYWORD.exec(text); hit !== null; hit = KEYWORD.exec(text)) {
    let start = hit.index;
    let end = hit.index + hit[0].length;
    if (start < scannedTo) continue;
    while (start > 0 && KEY_CHAR.test(text[start - 1]!)) start--;
    while (end < text.length && KEY_CHAR.test(text[end]!)) end++;
    // a key ends with a letter or digit: a trailing `.` or `-` is punctuation (`password.`, `token-`)
    while (end > hit.index + hit[0].length && /[.$-]/.test(text[end - 1]!)) end--;
    scannedTo = end;
    KEYWORD.lastIndex = end;
    const key = text.slice(start, end).replace(/^[.$-]+/, '');
    if (!isCredentialKey(key)) continue;
    const assignment = valueAfterKey(text, start, end);
    if (assignment !== undefined) found.push({ ...assignment, key });
  }
  return found;
}

/**
 * Whether a bare value that reads as an identifier (`Xq7mZ2pLw9vK3`, `confirm`) is a literal
 * rather than a reference, by the assignment's form: `KEY=value` with nothing between the key, the
 * `=` and the value (`.env`, shell `export`, Compose's `- KEY=value`, properties, Dockerfile
 * `ENV`: formatted code puts spaces there, and these formats have no bare references), or a
 * `key: value` with an unquoted key (YAML, where a bare word is a string) whose value holds a
 * digit (a JavaScript object's last property `password: confirm`, and `'Authorization': type1msg`
 * with a quoted key, as in typed-rest-client's ntlm.js, stay references). Without this an
 * alphanumeric password or API key in a `.env`-style line (the commonest form) was taken for a variable.
 * @param op the assignment's operator; @param adjacent whether the value starts right after `KEY=`;
 * @param quotedKey whether the key is in quotes.
 */
function configLiteral(op: string, adjacent: boolean, quotedKey: boolean, value: string): boolean {
  return (op === '=' && adjacent) || (op === ':' && !quotedKey && /\d/.test(value));
}

/** The non-placeholder literal assigned to the key at `keyStart`…`keyEnd`, if any. */
function valueAfterKey(text: string, keyStart: number, keyEnd: number): { start: number; end: number } | undefined {
  const open = text[keyStart - 1];
  if (open === '<') {
    XML_TAIL.lastIndex = keyEnd;
    const xml = XML_TAIL.exec(text);
    if (xml === null) return undefined;
    const start = keyEnd + xml[0].indexOf(xml[1]!);
    return isPlaceholderValue(xml[1]!, false) ? undefined : { start, end: start + xml[1]!.length };
  }
  const lineStart = text.lastIndexOf('\n', keyStart - 1) + 1;
  if (NAME_BEFORE.test(text.slice(Math.max(lineStart, keyStart - 40), keyStart))) {
    NAME_VALUE_TAIL.lastIndex = keyEnd;
    const pair = NAME_VALUE_TAIL.exec(text);
    if (pair === null) return undefined;
    const value = pair[1] ?? pair[2] ?? pair[3]!;
    const start = keyEnd + pair[0].length - value.length - (pair[3] !== undefined ? 0 : 1);
    return isPlaceholderValue(value, pair[3] !== undefined && !configLiteral(':', false, false, value)) ? undefined : { start, end: start + value.length };
  }
  TAIL.lastIndex = keyEnd;
  const m = TAIL.exec(text);
  if (m === null) return undefined;
  const [whole, closing, op, dq, sq, bq, scheme, bare] = m;
  const quotedKey = closing !== '';
  if (quotedKey && open !== closing) return undefined;
  let value = dq ?? sq ?? bq ?? scheme ?? bare;
  if (value === undefined) return undefined;
  const isBare = bare !== undefined;
  // a comparison or a call's argument list only with a literal on both sides
  if ((op === ',' && (!quotedKey || closing === '\x60' || isBare || scheme !== undefined)) || (/^[!=]=/.test(op!) && isBare)) return undefined;
  let start = keyEnd + whole.length - value.length - (isBare || scheme !== undefined ? 0 : 1);
  const auth = AUTH_SCHEME.exec(value);
  if (auth !== null) {
    value = value.slice(auth[0].length);
    start += auth[0].length;
  }
  return isPlaceholderValue(value, isBare && !configLiteral(op!, start === keyEnd + 1, quotedKey, value)) ? undefined : { start, end: start + value.length };
}
