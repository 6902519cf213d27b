/**
 * Token formats that secretlint's preset (12.0.0) lacks, recognisable by their value alone, each
 * written from its issuer's published format (and cross-checked with gitleaks' rule of the same
 * id, which is a Go binary, not a package this extension can run in-process). No maintained npm
 * package ships these detectors for Node 20: secretlint has no rule for them (its preset 13 and
 * canary preset need Node 22 and add none of them either), and the npm packages named after
 * gitleaks or detect-secrets are wrappers that download or run another program (issue 29).
 *
 * Each pattern is a fixed prefix or shape followed by random characters, bounded on both sides so
 * that an identifier that merely starts the same way (`sk_live_mode`, `SKIP…`) does not match.
 */

/** One token format: the rule name reported for it (`SecretFinding.rule`), its pattern, and an optional check of each match. */
export interface TokenFormat {
  rule: string;
  /** A global regular expression; each match is one token. */
  pattern: RegExp;
  /** Says whether a match is a token (a JWT's header must decode to a JSON object with `alg`); absent: every match is. */
  accept?: (token: string) => boolean;
}

/**
 * A JWT's first segment decodes (base64url, RFC 7515 §2) to a JOSE header: a JSON object with an
 * `alg` string (RFC 7515 §4.1.1, required). Rules out dotted base64 that is not a token.
 */
function isJoseHeader(token: string): boolean {
  const header = token.slice(0, token.indexOf('.'));
  try {
    const value: unknown = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && typeof (value as { alg?: unknown }).alg === 'string';
  } catch {
    return false;
  }
}

/**
 * The formats, in report order:
 * - `stripe`: Stripe secret (`sk_`) and restricted (`rk_`) keys, live and test mode, 24+ characters.
 * - `google-api-key`: `AIza` and 35 characters of `[A-Za-z0-9_-]`.
 * - `jwt`: a signed JSON Web Token (RFC 7519): three base64url segments, header and claims JSON
 *   objects (so both start `eyJ`, base64 of `{"`), the header naming its `alg`.
 * - `sendgrid-api-key`: `SG.` + 22 + `.` + 43 characters of base64url; the preset's rule misses a
 *   key with `-` in its first segment.
 * - `twilio-api-key`: an API key SID, `SK` + 32 hexadecimal digits (Twilio's SID format: a
 *   two-letter type prefix and a 128-bit id).
 * - `digitalocean`: personal access, OAuth access and refresh tokens, `dop_v1_` / `doo_v1_` /
 *   `dor_v1_` + 64 hexadecimal digits.
 * - `pypi`: PyPI and TestPyPI API tokens, `pypi-` + a base64url macaroon whose first bytes encode
 *   the location `pypi.org` (`AgEIcHlwaS5vcmc`) or `test.pypi.org` (`AgENdGVzdC5weXBpLm9yZw`).
 * - `telegram-bot`: a Bot API token, the bot's numeric id (8–10 digits), `:`, and 35 characters
 *   starting `AA`.
 * - `discord-webhook`: a webhook URL, `https://discord.com/api/webhooks/<id>/<token>` (also
 *   `discordapp.com`, the `ptb.`/`canary.` hosts and `/api/v<N>/`); its token alone posts as the hook.
 */
export const TOKEN_FORMATS: readonly TokenFormat[] = [
  { rule: 'stripe', pattern: /(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}(?![A-Za-z0-9])/g },
  { rule: 'google-api-key', pattern: /(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])/g },
  { rule: 'jwt', pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,16384}\.[A-Za-z0-9_-]{16,1024}(?![A-Za-z0-9_-])/g, accept: isJoseHeader },
  { rule: 'sendgrid-api-key', pattern: /(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g },
  { rule: 'twilio-api-key', pattern: /(?<![A-Za-z0-9_])SK[0-9a-fA-F]{32}(?![A-Za-z0-9_])/g },
  { rule: 'digitalocean', pattern: /(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9_])/g },
  { rule: 'pypi', pattern: /(?<![A-Za-z0-9_-])pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,1000}(?![A-Za-z0-9_-])/g },
  { rule: 'telegram-bot', pattern: /(?<![A-Za-z0-9_])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])/g },
  { rule: 'discord-webhook', pattern: /https:\/\/(?:(?:ptb|canary)\.)?discord(?:app)?\.com\/api(?:\/v[0-9]{1,2})?\/webhooks\/[0-9]{17,20}\/[A-Za-z0-9_-]{60,100}(?![A-Za-z0-9_-])/g },
];

/** One token found by `findTokens`: the format's rule and the token's range (start inclusive, end exclusive). */
export interface TokenMatch {
  rule: string;
  start: number;
  end: number;
}

/** Every token of `TOKEN_FORMATS` in `text`, grouped by format in the list's order (each format's matches in text order). Pure. */
export function findTokens(text: string): TokenMatch[] {
  const found: TokenMatch[] = [];
  for (const { rule, pattern, accept } of TOKEN_FORMATS) {
    for (const match of text.matchAll(pattern)) {
      if (accept !== undefined && !accept(match[0])) continue;
      const start = match.index ?? 0;
      found.push({ rule, start, end: start + match[0].length });
    }
  }
  return found;
}
