/**
 * The wording of secret reasons: every rule of secretlint's preset and RepoSnap's own has a
 * name and the article its pronunciation takes ("an AWS secret", never "a aws secret").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SECRET_RULE_NAMES, secretPhrase } from '../../src/context/secret-names';
import { PRIVATE_KEY_BLOCK_RULE } from '../../src/context/secrets';
import { TOKEN_FORMATS } from '../../src/context/token-formats';

test('every secret rule is named, with its article', async () => {
  // the rule ids as src/context/secrets.ts names them: the preset's rules, less the package prefix
  const preset = await import('@secretlint/secretlint-rule-preset-recommend');
  const rules = (preset.rules as unknown as Array<{ meta: { id: string } }>)
    .map((r) => r.meta.id.replace(/^@secretlint\/secretlint-rule-/, ''))
    .filter((id) => id !== 'filter-comments');
  assert.ok(rules.length >= 20, `preset rules found: ${rules.join(', ')}`);
  for (const rule of [...rules, ...TOKEN_FORMATS.map((f) => f.rule), PRIVATE_KEY_BLOCK_RULE, 'generic-credential']) assert.ok(rule in SECRET_RULE_NAMES, `no name for the rule '${rule}'`);
});

test('articles and brand spellings', () => {
  assert.equal(secretPhrase('aws'), 'an AWS secret');
  assert.equal(secretPhrase('npm'), 'an npm secret');
  assert.equal(secretPhrase('openai'), 'an OpenAI secret');
  assert.equal(secretPhrase('anthropic'), 'an Anthropic secret');
  assert.equal(secretPhrase('github'), 'a GitHub secret');
  assert.equal(secretPhrase('huggingface'), 'a Hugging Face secret');
  assert.equal(secretPhrase('1password'), 'a 1Password secret');
  assert.equal(secretPhrase('privatekey'), 'a private-key secret');
  assert.equal(secretPhrase('example'), 'an example secret', 'an unknown id: by its first letter');
  assert.equal(secretPhrase('zed'), 'a zed secret');
});
