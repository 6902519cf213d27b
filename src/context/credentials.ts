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
 *   characters); the corpus counts are in `bench/results/secrets-generic.json`. A password
 *   is a password even when weak: a value given to a password key (`isPasswordKey`: `password`,
 *   `passwd`, `pwd`, `pass`, `passphrase`, glued or not) needs only `MIN_PASSWORD_CHARS` (6) and
 *   `MIN_PASSWORD_ENTROPY_BITS` (2.0), so `DB_PASSWORD=hunter22` (2.75 bits) is caught while
 *   `aaaaaaaaaaaa` is not; the placeholder checks apply to it unchanged;
 * - glued keys (`PGPASSWORD`, `DBPASS`, `MYSQL_ROOTPASSWORD`): a last word that ends with a
 *   password word after a prefix of 2+ letters is a password key (`gluedPasswordWord`), a short
 *   `pass` only after an owner of `GLUED_PASS_OWNERS` (`db`, `pg`, `redis`, `ssh`, `smtp`, `admin`,
 *   …: `bypass`, `compass`, `surpass`, `renderpass`, `minipass` stay words), never the flags and
 *   names of `GLUED_STOP_WORDS` (`oldpwd`, `nopasswd`, …). Only the password words glue: a glued `token` or `secret`
 *   (`eostoken`, `nosecret`) is far more often a tokenizer's or a flag's name than a credential,
 *   and a word that merely starts with one (`passthrough`, `tokenizer`) is never a key.
 *
 * Values are literals only: quoted strings (with `r`/`b`/`u`/`f` prefixes, `@` of
 * Objective-C), a bare word to the end of the line (`.env`, YAML, INI, properties, shell,
 * Dockerfile `ENV`; a trailing comment allowed), an XML element's text, `Bearer`/`Basic`
 * credentials after `Authorization`, and the `value` of a name/value pair named by the key
 * (Kubernetes and Compose `env` entries, ECS task definitions), typed declarations (`const apiKey:
 * string = "…"`, Go's `const apiKey string = "…"`), and the literal fallback
 * of an environment read (`process.env.API_KEY || "…"`, `?? "…"`, `os.getenv("API_KEY") or "…"`;
 * `os.getenv("API_KEY", "…")` by the `,` form). A call, an expression, a reference or a comparison
 * with another variable is never a value. In a configuration file (`isConfigFileName`: `.ini`,
 * `.cfg`, `.conf`, `.cnf`, `.properties`, `.pypirc`, …, or a text whose first line is an INI
 * `[section]`) a bare value is a literal also after `key = ` with spaces (`pass = hunter22`), as
 * those formats have no references.
 *
 * Credentials without a key, found by their shape (`findKeylessCredentials`), each checked as a
 * password value: a `.pgpass` line (`host:port:database:user:password`, the port a number or
 * `*`), a password on a command line (`mysql -pXXXX` and the other MySQL/MariaDB clients,
 * `--password=XXXX` and `--password XXXX` of any command, `--db-password …` likewise, `sshpass -p
 * XXXX`, openssl's `-passin pass:XXXX`, `curl -u user:XXXX`), and a URL's userinfo
 * (`scheme://user:XXXX@host`) where secretlint's `basicauth` and `database-connection-string`
 * do not reach (other schemes, a host without a short top-level domain, a password with
 * symbols); where they do, theirs is the report.
 */

/** A value assigned to a credential-named key, found by `findCredentialAssignments`. */
export interface CredentialAssignment {
  /** Offset of the value's first character in the text (UTF-16 code units), after any `Bearer ` prefix. */
  start: number;
  /** Offset just past the value's last character. */
  end: number;
  /**
   * The key as written (`DB_PASSWORD`, `config.apiKey`), without quotes; for a credential without
   * a key (`findKeylessCredentials`), the flag (`-p`, `--password`, `-u`, `-passin`) or the
   * `.pgpass` line's `host:port:database:user`.
   */
  key: string;
}

/** Options of `findCredentialAssignments`. */
export interface CredentialScanOptions {
  /**
   * The text is a configuration file (`isConfigFileName`, `isConfigText`), where a bare value is
   * always a literal: `pass = hunter22` is reported, as in a `.env` line. Default false (code,
   * where `password = confirm` is a reference).
   */
  config?: boolean;
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

/** Shortest value reported for a password key (`isPasswordKey`) [characters]: `hunter2` is a password. */
export const MIN_PASSWORD_CHARS = 6;

/**
 * Least Shannon entropy of a password key's value [bits per character]: keeps a run such as
 * `aaaaaaaaaaaa` (0 bits) or `abababab` (1 bit) out, lets a weak human password such as
 * `hunter22` (2.75 bits) in.
 */
export const MIN_PASSWORD_ENTROPY_BITS = 2.0;

/** Last words that name a password (`password`, `DB_PASS`): their values are checked with the password bounds. */
const PASSWORD_WORDS: readonly string[] = ['password', 'passwd', 'passphrase', 'pwd', 'pass'];

/**
 * Words that end with a password word but do not name a password (lower case, trailing digits
 * dropped as `keyWords` drops them): shell's previous directory (`oldpwd`), sudo's `nopasswd`, flags
 * (`nopassword`, `haspassword`, `showpassword`, `askpassword`), tools (`getpwd`).
 */
const GLUED_STOP_WORDS: ReadonlySet<string> = new Set(['oldpwd', 'getpwd', 'nopasswd', 'nopassword', 'haspassword', 'showpassword', 'askpassword', 'needpassword', 'forgotpassword', 'resetpassword']);

/**
 * What a glued `pass` must follow (`DBPASS`, `SSHPASS`, `SMTPPASS`): the owners of a password. `pass`
 * ends too many other words to glue freely: English (`bypass`, `compass`, `surpass`), graphics and
 * compilers (`renderpass`, `subpass`, `multipass`), names (`minipass`, npm's stream package, in every
 * lockfile; `buypass`, a certificate authority; `keepass`, `askpass`; pygments' `EXPASS` command).
 * The longer words (`password`, `passwd`, `passphrase`, `pwd`) glue after any prefix of 2+ letters.
 */
const GLUED_PASS_OWNERS: readonly string[] = [
  'db', 'pg', 'my', 'sql', 'mysql', 'mssql', 'postgres', 'redis', 'mongo', 'mongodb', 'rabbit', 'rabbitmq', 'amqp', 'es', 'elastic', 'ldap', 'smtp', 'mail', 'imap',
  'pop', 'ftp', 'sftp', 'ssh', 'sudo', 'root', 'admin', 'user', 'usr', 'login', 'auth', 'api', 'app', 'web', 'proxy', 'vnc', 'wifi', 'wlan', 'sa', 'bind', 'master', 'keystore', 'store', 'key',
];

/**
 * The password word a glued last word ends with (`pgpassword` → `password`, `dbpass` → `pass`):
 * `password`, `passwd`, `passphrase` or `pwd` after a prefix of at least 2 letters, `pass` after one
 * of `GLUED_PASS_OWNERS`; not a word of `GLUED_STOP_WORDS`; `undefined` otherwise.
 */
function gluedPasswordWord(word: string): string | undefined {
  if (GLUED_STOP_WORDS.has(word) || !/^\p{L}{2}/u.test(word)) return undefined;
  const glued = PASSWORD_WORDS.find((w) => word.length >= w.length + 2 && word.endsWith(w));
  if (glued !== 'pass') return glued;
  return GLUED_PASS_OWNERS.includes(word.slice(0, -'pass'.length)) ? glued : undefined;
}

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
 * an optional `[]`, an optional type annotation (`: str =`, `: string =`, Go's ` string =`), the operator (`||`, `??` and `or` after the key, or after `)` or `]` closing a
 * quoted key's call or index, for an environment read's fallback), and
 * the value. Groups: 1 closing quote, 2 operator, 3–5 quoted value ("…", '…', `…`), 6 an
 * `Authorization` credential after `Bearer`/`Basic`/`Token`, 7 a bare value that ends the line.
 */
const TAIL = new RegExp(
  [
    String.raw`(["'\x60]?)[ \t]*(?:\[\])?[ \t]*`,
    String.raw`(?::[ \t]*[A-Za-z_][\w.<>\[\]|?, ]{0,60}?[ \t]*(?=[:=]=?))?`,
    String.raw`(?:string[ \t]*(?==[^=]))?`,
    // the operator; C's `#define NAME "value"` has none
    String.raw`([)\]]?[ \t]*(?:\|\||\?\?|or(?=[ \t]))|:=|=>|===?|!==?|=|:(?!:)|,|(?<=^[ \t]*#[ \t]*define[ \t]+\w+[ \t]+)(?=["']))[ \t]*`,
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
const XML_TAIL = new RegExp(String.raw`>[ \t]*([^<\s]{${MIN_PASSWORD_CHARS},${MAX_VALUE_CHARS}})[ \t]*</`, 'y');

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
 * Whether `key` names a credential: its last word is one of `CREDENTIAL_WORDS` or a glued
 * password word (`PGPASSWORD`, `DBPASS`; `gluedPasswordWord`), or its last
 * two are a `KEY_QUALIFIERS` word and `key`; and the word before is not one of
 * `NOT_CREDENTIAL_QUALIFIERS` and no word marks a stand-in (`STAND_IN_WORDS`).
 */
export function isCredentialKey(key: string): boolean {
  const words = keyWords(key);
  const last = words[words.length - 1];
  if (last === undefined) return false;
  const before = words[words.length - 2];
  const named = CREDENTIAL_WORDS.has(last) || gluedPasswordWord(last) !== undefined || (last === 'key' && before !== undefined && KEY_QUALIFIERS.has(before));
  if (!named) return false;
  const qualifier = last === 'key' ? words[words.length - 3] : before;
  if (qualifier !== undefined && NOT_CREDENTIAL_QUALIFIERS.has(qualifier)) return false;
  return !words.some((w) => STAND_IN_WORDS.has(w));
}

/**
 * Whether `key` names a password, whose values are checked with the weaker password bounds
 * (`MIN_PASSWORD_CHARS`, `MIN_PASSWORD_ENTROPY_BITS`): a credential key (`isCredentialKey`)
 * whose last word is `password`, `passwd`, `pwd`, `pass` or `passphrase`, or ends with one
 * glued (`PGPASSWORD`, `DBPASS`). `API_TOKEN`, `client_secret` and `apiKey` are not.
 */
export function isPasswordKey(key: string): boolean {
  if (!isCredentialKey(key)) return false;
  const words = keyWords(key);
  const last = words[words.length - 1]!;
  return PASSWORD_WORDS.includes(last) || gluedPasswordWord(last) !== undefined;
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
 * (`/etc/x`, `./keys`, `~/.ssh`, `C:\\x`, `src/cache/token.ts`) or URL, a number or a version (`^7.1.2`), only letters with `_ . -`
 * (an identifier or a word, as gitleaks' allowlist), a reference when `bare` (an unquoted
 * identifier or member chain, also behind unary operators: `!!config.withCredentials`), a call (`Ident(3)`), one of `PLACEHOLDER_PARTS`, without a letter or
 * digit (`***`, `--------`), or below `MIN_ENTROPY_BITS`. With `password` (the value of a password
 * key, `isPasswordKey`) the bounds are `MIN_PASSWORD_CHARS` and `MIN_PASSWORD_ENTROPY_BITS`
 * instead, every other check the same.
 */
export function isPlaceholderValue(value: string, bare: boolean, password = false): boolean {
  if (value.length < (password ? MIN_PASSWORD_CHARS : MIN_VALUE_CHARS) || value.length > MAX_VALUE_CHARS) return true;
  if (/[\s"'\x60]/.test(value)) return true;
  if (!/[\p{L}\p{N}]/u.test(value)) return true;
  if (/\$\{|\{\{|%\(|%[sdr]|#\{|^\$|^%.*%$|\{[\w.[\]'"()-]*\}/.test(value)) return true;
  if (/^(?:\.{0,2}\/|~\/|[A-Za-z]:\\)|:\/\/|^[\w.-]+(?:\/[\w.-]+)+\.[A-Za-z]\w{0,4}$/.test(value)) return true;
  if (/^[-+]?(?:0[xX][0-9a-fA-F]+|\d[\d_,.]*(?:[eE][-+]?\d+)?)[uUlLfF]*$/.test(value)) return true;
  // a version or version range (`^7.1.2`, `~1.0`, `>=2.0.0-rc.1`, `v1.2.3`): a dependency's, as `"minipass": "^7.1.2"`
  if (/^(?:[\^~]|[<>]=?|=)?v?\d+(?:\.(?:\d+|[x*]))+(?:[-+][\w.]+)?$/.test(value)) return true;
  if (/^[\p{L}_.-]+$/u.test(value)) return true;
  // a bare reference, also behind unary operators (`!!config.withCredentials`, `-offset`, `~mask`:
  // axios's `request.withCredentials = !!_config.withCredentials` is code, not a credential)
  const operand = bare ? value.replace(/^[!~+-]+/, '') : value;
  if (bare && REFERENCE.test(operand)) return true;
  // code quoted as text: a call such as `Ident(3)` or `getToken(user)` (a token kind's name, a template's expression)
  if (/^[\p{L}_$][\p{L}\p{N}_$.]*\([^()]*\)$/u.test(operand)) return true;
  const lower = value.toLowerCase();
  if (PLACEHOLDER_PARTS.some((p) => lower.includes(p))) return true;
  return shannonEntropy(value) < (password ? MIN_PASSWORD_ENTROPY_BITS : MIN_ENTROPY_BITS);
}

/**
 * Every credential assignment in `text` (a file's content), in text order: a key that
 * `isCredentialKey` accepts, then an operator (`=`, `:`, `:=`, `=>`, `==`/`!=` with a quoted
 * value, `,` between a key and a value both in `'` or `"` quotes as in `define('DB_PASSWORD', '…')` or
 * `getenv("API_KEY", "…")`) or an XML element (`<password>…</password>`), then a literal
 * value that `isPlaceholderValue` rejects (with the password bounds for a password key,
 * `isPasswordKey`); then the credentials without a key (`findKeylessCredentials`). `options.config`
 * reads bare values as literals (a configuration file). The ranges cover the values, never the keys. Pure;
 * 5.1–9.7 ms per MB of source at load 2.9, 6.6–13.7 at load 7.7; 7.5–18.9 with the keyless forms and
 * password keys at load 3–6 (bench/secrets, 0.2 -> 0.38 of the other rules' cost over node_modules).
 */
export function findCredentialAssignments(text: string, options: CredentialScanOptions = {}): CredentialAssignment[] {
  const found: CredentialAssignment[] = [];
  const config = options.config ?? false;
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
    const assignment = valueAfterKey(text, start, end, isPasswordKey(key), config);
    if (assignment !== undefined) found.push({ ...assignment, key });
  }
  const keyless = findKeylessCredentials(text);
  if (keyless.length === 0) return found;
  // a `--password=…` at the end of a line is both an assignment and a flag: reported once
  const starts = new Set(found.map((a) => a.start));
  return [...found, ...keyless.filter((a) => !starts.has(a.start))].sort((a, b) => a.start - b.start);
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
 * @param quotedKey whether the key is in quotes; @param config whether the text is a
 * configuration file (`CredentialScanOptions.config`), where every bare value after `=` or `:` is a literal.
 */
function configLiteral(op: string, adjacent: boolean, quotedKey: boolean, value: string, config = false): boolean {
  return (op === '=' && (adjacent || config)) || (op === ':' && ((!quotedKey && /\d/.test(value)) || config));
}

/**
 * The non-placeholder literal assigned to the key at `keyStart`…`keyEnd`, if any; `password`: the
 * key is a password key (the password bounds apply), `config`: the text is a configuration file.
 */
function valueAfterKey(text: string, keyStart: number, keyEnd: number, password: boolean, config: boolean): { start: number; end: number } | undefined {
  const open = text[keyStart - 1];
  if (open === '<') {
    XML_TAIL.lastIndex = keyEnd;
    const xml = XML_TAIL.exec(text);
    if (xml === null) return undefined;
    const start = keyEnd + xml[0].indexOf(xml[1]!);
    return isPlaceholderValue(xml[1]!, false, password) ? undefined : { start, end: start + xml[1]!.length };
  }
  const lineStart = text.lastIndexOf('\n', keyStart - 1) + 1;
  if (NAME_BEFORE.test(text.slice(Math.max(lineStart, keyStart - 40), keyStart))) {
    NAME_VALUE_TAIL.lastIndex = keyEnd;
    const pair = NAME_VALUE_TAIL.exec(text);
    if (pair === null) return undefined;
    const value = pair[1] ?? pair[2] ?? pair[3]!;
    const start = keyEnd + pair[0].length - value.length - (pair[3] !== undefined ? 0 : 1);
    return isPlaceholderValue(value, pair[3] !== undefined && !configLiteral(':', false, false, value, config), password) ? undefined : { start, end: start + value.length };
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
  // an environment read's fallback only with a quoted literal; `)` or `]` only after a quoted key (`getenv("K") || "…"`)
  if (/(?:\|\||\?\?|or)$/.test(op!) && (isBare || scheme !== undefined || (/^[)\]]/.test(op!) && !quotedKey))) return undefined;
  let start = keyEnd + whole.length - value.length - (isBare || scheme !== undefined ? 0 : 1);
  const auth = AUTH_SCHEME.exec(value);
  if (auth !== null) {
    value = value.slice(auth[0].length);
    start += auth[0].length;
  }
  return isPlaceholderValue(value, isBare && !configLiteral(op!, start === keyEnd + 1, quotedKey, value, config), password) ? undefined : { start, end: start + value.length };
}

/** Extensions (lower case) of configuration formats without references, where a bare value is a literal. */
const CONFIG_EXTENSIONS: ReadonlySet<string> = new Set(['.ini', '.cfg', '.conf', '.cnf', '.properties', '.env']);

/** Base names (lower case) of configuration files without such an extension (client credential files). */
const CONFIG_NAMES: ReadonlySet<string> = new Set(['.pypirc', '.npmrc', '.s3cfg', '.boto', '.pgpass', '.my.cnf', '.mylogin.cnf', '.gitconfig', '.env', '.envrc']);

/**
 * Whether the file named `name` (a path, `/`-separated) is a configuration file for
 * `CredentialScanOptions.config`: an extension of `CONFIG_EXTENSIONS` (`.ini`, `.cfg`, `.conf`,
 * `.cnf`, `.properties`, `.env`) or a base name of `CONFIG_NAMES` (`.pypirc`, `.my.cnf`, …), in any
 * letter case. `undefined` is not.
 */
export function isConfigFileName(name: string | undefined): boolean {
  if (name === undefined) return false;
  const base = name.slice(name.lastIndexOf('/') + 1).toLowerCase();
  const dot = base.lastIndexOf('.');
  return CONFIG_NAMES.has(base) || (dot > 0 && CONFIG_EXTENSIONS.has(base.slice(dot)));
}

/**
 * Whether `text` reads as an INI file whatever its name: its first line that is neither blank nor
 * a `#` or `;` comment is a section header (`[database]`, `[client]`, `[pypi]`).
 */
export function isConfigText(text: string): boolean {
  return /(?:[ \t]*(?:[#;][^\n]*)?\r?\n)*\[[\w .:-]{1,80}\][ \t]*\r?$/my.test(text);
}

/** A password on a command line: a quoted string or a shell word. Groups: 1 '…', 2 "…", 3 bare. */
const SHELL_VALUE = String.raw`(?:'([^'\n]{1,${MAX_VALUE_CHARS}})'|"([^"\n]{1,${MAX_VALUE_CHARS}})"|([^\s'"\x60;|&<>()]{1,${MAX_VALUE_CHARS}}))`;

/**
 * A command line of a MySQL or MariaDB client (group 1 the rest of the line), whose `-pXXXX` (no
 * space: `-p XXXX` asks for the password and takes `XXXX` as the database) is a password.
 */
const MYSQL_COMMAND = /(?<![\w.-])(?:mysql(?:dump|admin|import|check|show|pump|sh|binlog)?|mariadb(?:-?dump|-?admin|-?import|-?check)?)(?=[ \t])([^\n]*)/g;

/** `-pXXXX` in a MySQL client's arguments. Groups: 1 the flag, then `SHELL_VALUE`'s. */
const MYSQL_PASSWORD = new RegExp(String.raw`(?<=[ \t])(-p)` + SHELL_VALUE, 'g');

/** A curl command line (group 1 the rest of the line), whose `-u user:XXXX` (`--user`) holds a password. */
const CURL_COMMAND = /(?<![\w.-])curl(?=[ \t])([^\n]*)/g;

/** `-u user:XXXX` or `--user user:XXXX` in curl's arguments. Groups: 1 the flag, 2 '…', 3 "…", 4 bare: each `user:password`. */
const CURL_USER = /(?<=[ \t])(-u|--user)(?:[ \t]*|=)(?:'([^'\n]*:[^'\n]+)'|"([^"\n]*:[^"\n]+)"|([^\s'"\x60;|&<>():]*:[^\s'"\x60;|&<>()]+))/g;

/**
 * Flags that take a password on any command line. Groups: 1 the flag, then `SHELL_VALUE`'s:
 * `--password=XXXX`, `--password XXXX` (also `--passwd`, `--pass`, `--passphrase`, and with a
 * prefix: `--db-password`, `--http-password`), `sshpass -p XXXX`, openssl's `-passin pass:XXXX`
 * (`-passout`, `-pass`).
 */
const PASSWORD_FLAG = new RegExp(
  String.raw`(?:(?<=^|[ \t])(--(?:[A-Za-z]+-)*(?:password|passwd|passphrase|pass))(?:=|[ \t]+)` +
    String.raw`|(?<![\w.-])sshpass[ \t]+(-p)[ \t]+` +
    String.raw`|(?<=[ \t])(-pass(?:in|out)?)[ \t]+pass:)` +
    SHELL_VALUE,
  'gm',
);

/**
 * A `.pgpass` line (PostgreSQL's password file: `hostname:port:database:username:password`, the
 * port a number or `*`), standing alone or in quotes (`echo "db:5432:app:admin:…" >> ~/.pgpass`).
 * The match starts at the colon after the host, the host checked behind the port (a literal first,
 * then the lookbehind, keeps the scan at 1–2 ms/MB; a leading lookbehind cost 30);
 * group 1 the password (`\:` and `\\` escaped). The database is not a number: `main.go:12:5:…`
 * is a compiler's position.
 */

/**
 * A URL's userinfo, `scheme://user:password@host`, any scheme (`https`, `redis`, `amqp`, `smtp`,
 * …; the user may be empty: `redis://:…@host`). secretlint's `basicauth` reports only `http(s)`
 * and `ftp(s)` URLs whose password is `[-A-Za-z0-9_]` and whose host ends with a 1–6-character
 * top-level domain (`@ci.internal` and `p%40ss…` pass it by), `database-connection-string` only
 * MongoDB, MySQL and PostgreSQL URIs; a URL both find is reported by theirs (`findSecret`).
 * The match starts at `://`, the scheme checked behind it (a leading lookbehind cost 34 ms/MB, this
 * 2); group 1 the password.
 * A backslash is no URL character: `us\xA0er:pa\uD7FFss@` is a URI parser's test string.
 */
const URL_USERINFO = /:\/\/(?<=(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/)[^\s:@\/'"<>\x60{}\\]{0,256}:([^\s@\/'"<>\x60\\]{1,256})@(?=[\w[])/g;
const PGPASS_LINE = /:(?:\d{1,5}|\*):(?<=(?:^|[\s"'=>])(?:[A-Za-z0-9._-]{1,253}|\*):(?:\d{1,5}|\*):)(?!\d+:)[^:\s"'\\]+:[^:\s"'\\]+:((?:[^:\s"'\\]|\\[:\\]){1,400})(?=$|[\s"'<])/gm;

/**
 * Credentials without a key, found by their shape, in text order, each value checked as a
 * password's (`isPlaceholderValue` with the password bounds; a shell word is a literal, never
 * a reference): `mysql -pXXXX` (and `mysqldump`, `mysqladmin`, `mariadb`, …: the `-p` glued to its
 * value), `--password=XXXX` / `--password XXXX` and their kin on any command line (`PASSWORD_FLAG`),
 * `sshpass -p XXXX`, openssl's `-passin pass:XXXX`, `curl -u user:XXXX`, a `.pgpass` line
 * (`PGPASS_LINE`) and a URL's userinfo that secretlint's rules pass by (`URL_USERINFO`). Ranges
 * cover the password only. Pure.
 */
export function findKeylessCredentials(text: string): CredentialAssignment[] {
  const found: CredentialAssignment[] = [];
  const add = (key: string, value: string, start: number): void => {
    if (!isPlaceholderValue(value, false, true)) found.push({ start, end: start + value.length, key });
  };
  // a quoted value starts one character after its quote
  const shellValue = (m: RegExpExecArray, first: number): { value: string; offset: number } | undefined => {
    const value = m[first] ?? m[first + 1] ?? m[first + 2];
    if (value === undefined) return undefined;
    return { value, offset: m[0].length - value.length - (m[first + 2] === undefined ? 1 : 0) };
  };
  // each form only where its literal occurs: the scan stays at the cost of the assignments' (bench/secrets)
  if (text.includes('mysql') || text.includes('mariadb')) {
    for (const command of text.matchAll(MYSQL_COMMAND)) {
    const args = command[1]!;
    const base = command.index! + command[0].length - args.length;
    for (const m of args.matchAll(MYSQL_PASSWORD)) {
      const v = shellValue(m, 2);
      if (v !== undefined) add(m[1]!, v.value, base + m.index! + v.offset);
    }
  }
  }
  if (text.includes('curl')) {
    for (const command of text.matchAll(CURL_COMMAND)) {
    const args = command[1]!;
    const base = command.index! + command[0].length - args.length;
    for (const m of args.matchAll(CURL_USER)) {
      const pair = m[2] ?? m[3] ?? m[4]!;
      const password = pair.slice(pair.indexOf(':') + 1);
      add(m[1]!, password, base + m.index! + m[0].length - password.length - (m[4] === undefined ? 1 : 0));
    }
  }
  }
  if (text.includes('-pass') || text.includes('sshpass')) {
    for (const m of text.matchAll(PASSWORD_FLAG)) {
      const v = shellValue(m, 4);
      if (v !== undefined) add((m[1] ?? m[2] ?? m[3])!, v.value, m.index! + v.offset);
    }
  }
  // the key of a `.pgpass` line is `host:port:database:user`, of a URL `scheme://user`: read back before the match
  for (const m of text.matchAll(PGPASS_LINE)) {
    const host = /(?:[A-Za-z0-9._-]{1,253}|\*)$/.exec(text.slice(Math.max(0, m.index! - 253), m.index!))![0];
    add(host + m[0].slice(0, m[0].length - m[1]!.length - 1), m[1]!, m.index! + m[0].length - m[1]!.length);
  }
  if (text.includes('://')) {
    for (const m of text.matchAll(URL_USERINFO)) {
      const scheme = /[A-Za-z][A-Za-z0-9+.-]{0,30}$/.exec(text.slice(Math.max(0, m.index! - 31), m.index!))![0];
      add(scheme + m[0].slice(0, m[0].length - m[1]!.length - 2), m[1]!, m.index! + m[0].length - m[1]!.length - 1);
    }
  }
  return found.sort((a, b) => a.start - b.start);
}
