/**
 * How a secret rule is named in prose: the brand's own spelling and the article it takes
 * ("an AWS secret", "a GitHub secret", "an npm secret"). Rule ids are secretlint's preset's
 * (`@secretlint/secretlint-rule-<id>`) and RepoSnap's own (src/context/secrets.ts).
 */
export const SECRET_RULE_NAMES: Readonly<Record<string, readonly [article: 'a' | 'an', name: string]>> = {
  '1password': ['a', '1Password'],
  anthropic: ['an', 'Anthropic'],
  aws: ['an', 'AWS'],
  basicauth: ['a', 'basic-auth'],
  'database-connection-string': ['a', 'database connection string'],
  databricks: ['a', 'Databricks'],
  docker: ['a', 'Docker'],
  figma: ['a', 'Figma'],
  gcp: ['a', 'GCP'],
  github: ['a', 'GitHub'],
  gitlab: ['a', 'GitLab'],
  grafana: ['a', 'Grafana'],
  groq: ['a', 'Groq'],
  'hashicorp-vault': ['a', 'HashiCorp Vault'],
  huggingface: ['a', 'Hugging Face'],
  linear: ['a', 'Linear'],
  notion: ['a', 'Notion'],
  npm: ['an', 'npm'],
  openai: ['an', 'OpenAI'],
  privatekey: ['a', 'private-key'],
  sendgrid: ['a', 'SendGrid'],
  shopify: ['a', 'Shopify'],
  slack: ['a', 'Slack'],
  vercel: ['a', 'Vercel'],
  stripe: ['a', 'Stripe'],
  'google-api-key': ['a', 'Google API key'],
  'private-key-block': ['a', 'private-key'],
  jwt: ['a', 'JWT'],
  'sendgrid-api-key': ['a', 'SendGrid'],
  'twilio-api-key': ['a', 'Twilio'],
  digitalocean: ['a', 'DigitalOcean'],
  pypi: ['a', 'PyPI'],
  'telegram-bot': ['a', 'Telegram bot'],
  'discord-webhook': ['a', 'Discord webhook'],
  'generic-credential': ['a', 'generic credential'],
};

/**
 * "an AWS secret", "a GitHub secret", "a private-key secret": a secret rule id (see above) as a
 * noun phrase with its article. An unknown id is shown as it is, with "an" before a vowel letter.
 */
export function secretPhrase(rule: string): string {
  const known = SECRET_RULE_NAMES[rule];
  if (known !== undefined) return `${known[0]} ${known[1]} secret`;
  return `${/^[aeiou]/i.test(rule) ? 'an' : 'a'} ${rule} secret`;
}
