/**
 * Fake secrets of every kind the packer must keep out of the prompt, generated at run time.
 * Each key is assembled from pieces (a prefix split in two, then random characters from a
 * seeded generator), so that no string in this repository looks like a credential to a
 * scanner, and each run produces the same values.
 */
import crypto from 'node:crypto';

/** Deterministic pseudo-random characters from `alphabet` (a linear congruential generator). */
export function randomChars(seed: number, n: number, alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'): string {
  let x = seed >>> 0;
  let out = '';
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out += alphabet[(x >>> 16) % alphabet.length];
  }
  return out;
}

const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** A PEM block around base64 `body`, 64 characters a line. */
function pem(label: string, body: string): string {
  return `-----BEGIN ${label}-----\n${body.match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`;
}

/**
 * One fake secret placed in a file: `content` holds it on line `line`, starting at 1-based
 * `column` of the report (where the rule reports it: the token, or the start of an
 * assignment or block the rule matches as a whole), and `rule` names the rule that must
 * find it (`SecretFinding.rule`).
 */
export interface FakeSecret {
  kind: string;
  /** A file name that says nothing about secrets (content detection must not rely on names). */
  path: string;
  content: string;
  /** The secret itself, to check that it appears nowhere in the pack. */
  secret: string;
  rule: string;
  line: number;
  column: number;
}

/**
 * Every kind the issue lists, one file each, the secret on line 2 after a harmless line:
 * private keys (PKCS#1 PEM, OpenSSH), AWS access key ID and secret access key, GitHub classic
 * and fine-grained tokens, a GitLab token, a Slack bot token, a Stripe live key, a Google API
 * key, an npm token, OpenAI and Anthropic keys, a GCP service-account key file.
 */
export function fakeSecrets(): FakeSecret[] {
  const rsa = pem('RSA PRIV' + 'ATE KEY', 'MIIE' + randomChars(1, 320, BASE64));
  const openssh = pem('OPENSSH PRIV' + 'ATE KEY', 'b3BlbnNzaC1rZXkt' + 'djE' + randomChars(2, 280, BASE64));
  const awsId = 'AK' + 'IA' + randomChars(3, 16, UPPER_DIGITS);
  const awsSecret = randomChars(4, 40);
  const ghp = 'gh' + 'p_' + randomChars(5, 36);
  const ghFine = 'github' + '_pat_' + randomChars(6, 82);
  const glpat = 'gl' + 'pat-' + randomChars(7, 20);
  const slack = 'xo' + 'xb-' + randomChars(8, 12, '0123456789') + '-' + randomChars(9, 13, '0123456789') + '-' + randomChars(10, 24);
  const stripe = 'sk' + '_live_' + randomChars(11, 24);
  const google = 'AI' + 'za' + randomChars(12, 35);
  const npm = 'np' + 'm_' + randomChars(13, 36);
  const openai = 's' + 'k-' + randomChars(14, 20) + 'T3Blbk' + 'FJ' + randomChars(15, 20);
  const anthropic = 'sk' + '-ant-' + 'api03-' + randomChars(16, 93) + 'AA';
  const gcpKey = pem('PRIV' + 'ATE KEY', 'MIIE' + randomChars(17, 200, BASE64));
  const gcp = JSON.stringify({ type: 'service_account', project_id: 'demo', private_key_id: randomChars(18, 40), private_key: gcpKey, client_email: 'x@demo.iam.example' }, null, 2);

  const at = (kind: string, path: string, lead: string, secret: string, trail: string, rule: string, column = lead.length + 1): FakeSecret => ({
    kind,
    path,
    content: `# ${kind}\n${lead}${secret}${trail}\n`,
    secret,
    rule,
    line: 2,
    column,
  });
  return [
    at('private key (PEM)', 'docs/setup.md', '', rsa, '', 'privatekey'),
    at('private key (OpenSSH)', 'scripts/deploy.sh', '', openssh, '', 'privatekey'),
    at('AWS access key ID', 'config/app.yml', 'aws_access_key_id: ', awsId, '', 'aws'),
    at('AWS secret access key', 'config/cloud.ini', 'aws_secret_access_key = ', awsSecret, '', 'aws', 1),
    at('GitHub token', 'src/client.ts', 'const token = "', ghp, '";', 'github'),
    at('GitHub fine-grained token', 'src/forge.ts', 'export const pat = "', ghFine, '";', 'github'),
    at('GitLab token', 'ci/gitlab.py', 'TOKEN = "', glpat, '"', 'gitlab'),
    at('Slack token', 'bots/notify.js', 'const slack = "', slack, '";', 'slack'),
    at('Stripe key', 'billing/pay.rb', 'Stripe.api_key = "', stripe, '"', 'stripe'),
    at('Google API key', 'web/maps.html', '<script src="https://maps.example/js?key=', google, '"></script>', 'google-api-key'),
    at('npm token', 'notes/publish.txt', 'token: ', npm, '', 'npm'),
    at('OpenAI key', 'tools/ask.py', 'client = OpenAI(api_key="', openai, '")', 'openai'),
    at('Anthropic key', 'tools/claude.ts', 'const key = "', anthropic, '";', 'anthropic'),
    // the rule reports the whole service-account file (offset 0)
    { kind: 'GCP service-account key', path: 'deploy/service.json', content: gcp + '\n', secret: gcpKey.split('\n')[1]!, rule: 'gcp', line: 1, column: 1 },
  ];
}

const HEX = '0123456789abcdef';
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const DIGITS = '0123456789';

/**
 * One fresh private key per kind the issue lists, as PEM or armor text (node:crypto makes real
 * keys at run time; the PGP armor is shaped as `gpg --armor --export-secret-keys` writes it,
 * RFC 4880 §6.2, with a random body starting `lQ`, a secret-key packet's tag). Keys: kind names.
 */
export function fakePrivateKeys(seed = 1): Record<string, string> {
  const pgpLabel = 'PGP PRIV' + 'ATE KEY BLOCK';
  const pgpBody = ('lQ' + randomChars(seed, 700, BASE64)).match(/.{1,64}/g)!.join('\n');
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
  return {
    'Ed25519 PKCS#8': crypto.generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    'X25519 PKCS#8': crypto.generateKeyPairSync('x25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    'Ed448 PKCS#8': crypto.generateKeyPairSync('ed448').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    'EC SEC1': crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'sec1', format: 'pem' }) as string,
    'EC PKCS#8': crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    'encrypted PKCS#8': crypto.generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'correct horse' }) as string,
    'RSA PKCS#1': rsa.export({ type: 'pkcs1', format: 'pem' }) as string,
    'OpenPGP secret key': `-----BEGIN ${pgpLabel}-----\nComment: demo\n\n${pgpBody}\n=${randomChars(seed + 1, 4, BASE64)}\n-----END ${pgpLabel}-----\n`,
  };
}

/**
 * The seven token kinds of issue 29 that secretlint's preset 12.0.0 misses, one fresh fake each,
 * built from pieces at run time: a signed JWT, a SendGrid key with `-` in its first segment, a
 * Twilio API key SID, a DigitalOcean personal access token, a PyPI upload token, a Telegram bot
 * token and a Discord webhook URL. Keys: the rule that must report each (token-formats.ts).
 */
export function fakeTokens(seed = 1): Record<string, string> {
  const b64url = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return {
    jwt: `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url({ sub: randomChars(seed, 12, DIGITS), name: 'Demo', iat: 1_700_000_000 })}.${randomChars(seed + 1, 43, BASE64URL)}`,
    'sendgrid-api-key': 'S' + 'G.' + randomChars(seed + 2, 10) + '-' + randomChars(seed + 3, 11) + '.' + randomChars(seed + 4, 43, BASE64URL),
    'twilio-api-key': 'S' + 'K' + randomChars(seed + 5, 32, HEX),
    digitalocean: 'do' + 'p_v1_' + randomChars(seed + 6, 64, HEX),
    pypi: 'py' + 'pi-AgEIcHlwaS5vcmc' + randomChars(seed + 7, 160, BASE64URL),
    'telegram-bot': '7' + randomChars(seed + 8, 9, DIGITS) + ':A' + 'A' + randomChars(seed + 9, 33, BASE64URL),
    'discord-webhook': 'https://discord.com/api/web' + 'hooks/1' + randomChars(seed + 10, 17, DIGITS) + '/' + randomChars(seed + 11, 68, BASE64URL),
  };
}
