/**
 * Fake secrets of every kind the packer must keep out of the prompt, generated at run time.
 * Each key is assembled from pieces (a prefix split in two, then random characters from a
 * seeded generator), so that no string in this repository looks like a credential to a
 * scanner, and each run produces the same values.
 */

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
