/**
 * The chat webview's side of things that run without a browser: messages from the webview are
 * checked, answers render to safe HTML with highlighted code, copy buttons and file links, the
 * badge reads L → B (ratio) with times and the cache outcome, and the page's CSP allows nothing
 * remote and only its own nonce's script.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contentSecurityPolicy, webviewHtml } from '../../src/chat/html';
import { badgeText, formatMs, parseFromWebview, type AnswerStats } from '../../src/chat/protocol';
import { renderMarkdown } from '../../src/chat/render';
import { parseFromStatsWebview } from '../../src/stats/protocol';

test('webview messages: known ones parse to clean copies, the rest is rejected', () => {
  assert.deepEqual(parseFromWebview({ type: 'ask', text: '  Where is X?  ', extra: 1 }), { type: 'ask', text: 'Where is X?' });
  assert.deepEqual(parseFromWebview({ type: 'openFile', path: 'src/a.ts', line: 3 }), { type: 'openFile', path: 'src/a.ts', line: 3 });
  assert.deepEqual(parseFromWebview({ type: 'stop', junk: true }), { type: 'stop' });
  assert.deepEqual(parseFromWebview({ type: 'selectThread', id: 'abc' }), { type: 'selectThread', id: 'abc' });
  assert.deepEqual(parseFromWebview({ type: 'openExternal', url: 'https://example.com' }), { type: 'openExternal', url: 'https://example.com' });
  for (const bad of [
    null, 'ask', { type: 'ask', text: '   ' }, { type: 'ask', text: 'x'.repeat(20_001) }, { type: 'ask' },
    { type: 'openFile', path: 'a.ts', line: 0 }, { type: 'openFile', path: 'a.ts', line: 1.5 }, { type: 'openFile', path: '' },
    { type: 'openExternal', url: 'command:workbench.action.quit' }, { type: 'openExternal', url: 'file:///etc/passwd' },
    { type: 'selectThread', id: '' }, { type: 'eval', code: '1' },
  ]) {
    assert.equal(parseFromWebview(bad), undefined, JSON.stringify(bad));
  }
  assert.deepEqual(parseFromStatsWebview({ type: 'clear' }), { type: 'clear' });
  assert.equal(parseFromStatsWebview({ type: 'drop' }), undefined);
});

test('markdown: raw HTML is escaped, code is highlighted in a frame with a copy button', () => {
  const html = renderMarkdown('<img src=x onerror=alert(1)>\n\n```ts\nconst a = 1;\n```');
  assert.ok(!html.includes('<img'), html);
  assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
  assert.match(html, /<div class="code-block"><div class="code-head"><span class="code-lang">ts<\/span><button class="copy"/);
  assert.match(html, /<code class="hljs language-ts"><span class="hljs-keyword">const<\/span> a = <span class="hljs-number">1<\/span>;/);
});

test('markdown: file references become links with their line; links and code inside links are left alone', () => {
  const html = renderMarkdown('Budget in src/pipeline/ask.ts:42 and `src/a.ts#L3`; see [docs](https://e.com/x.md).');
  assert.match(html, /<a href="#" class="file-link" data-path="src\/pipeline\/ask.ts" data-line="42" title="Open src\/pipeline\/ask.ts:42">src\/pipeline\/ask.ts:42<\/a>/);
  assert.match(html, /<a href="#" class="file-link" data-path="src\/a.ts" data-line="3"[^>]*><code>src\/a.ts#L3<\/code><\/a>/);
  assert.match(html, /<a href="https:\/\/e.com\/x.md">docs<\/a>/);
  assert.equal((html.match(/file-link/g) ?? []).length, 2);
});

test('markdown: bidirectional controls (Trojan Source) are shown as markers in code blocks, inline code and text, never applied', () => {
  // CVE-2021-42574's example in a fenced block, inline code and prose: no control reaches the HTML
  const line = 'if (accessLevel != "user\u202e \u2066// Check if admin\u2069 \u2066") {';
  const html = renderMarkdown(`${line}\n\n\`\`\`js\n${line}\n\`\`\`\n\nthe \`a\u200fb\u061cc\u200ed\u202ae\u202bf\u202cg\u202dh\u2067i\u2068j\` span`);
  assert.doesNotMatch(html, /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u, 'a control left in the HTML');
  const marker = (code: string, name: string) => `<span class="bidi-control" title="U+${code} ${name}">⟨U+${code}⟩</span>`;
  const shown = `user${marker('202E', 'RIGHT-TO-LEFT OVERRIDE')} ${marker('2066', 'LEFT-TO-RIGHT ISOLATE')}// Check if admin${marker('2069', 'POP DIRECTIONAL ISOLATE')} ${marker('2066', 'LEFT-TO-RIGHT ISOLATE')}&quot;`;
  // in prose, and inside the code block's highlighted string
  assert.ok(html.includes(`<p>if (accessLevel != &quot;${shown}) {</p>`), html);
  assert.ok(html.includes(`<span class="hljs-string">&quot;${shown}</span>) {`), html);
  // inline code: each of the other nine
  assert.ok(
    html.includes(
      `<code>a${marker('200F', 'RIGHT-TO-LEFT MARK')}b${marker('061C', 'ARABIC LETTER MARK')}c${marker('200E', 'LEFT-TO-RIGHT MARK')}d${marker('202A', 'LEFT-TO-RIGHT EMBEDDING')}e${marker('202B', 'RIGHT-TO-LEFT EMBEDDING')}f${marker('202C', 'POP DIRECTIONAL FORMATTING')}g${marker('202D', 'LEFT-TO-RIGHT OVERRIDE')}h${marker('2067', 'RIGHT-TO-LEFT ISOLATE')}i${marker('2068', 'FIRST STRONG ISOLATE')}j</code>`,
    ),
    html,
  );
  // right-to-left letters are text, not controls; escaping is unchanged
  assert.equal(renderMarkdown('שלום <b> & `x<y`'), '<p>שלום &lt;b&gt; &amp; <code>x&lt;y</code></p>\n');
});

test('markdown: a javascript: link is not rendered as a link', () => {
  const html = renderMarkdown('[click](javascript:alert(1))');
  assert.ok(!html.includes('href="javascript'), html);
});

test('an unclosed code fence while streaming renders as a code block so far', () => {
  assert.match(renderMarkdown('Here:\n\n```py\ndef f():\n    ret'), /<pre><code class="hljs language-py">.*def.*ret/s);
});

const stats: AnswerStats = {
  L: 2004, B: 1024, ratio: 1024 / 2004, snap: true, files: 5, packMs: 93, prefillMs: 1606.2, prefillTokS: 1247.7, snapMs: 17.49,
  decodeMs: 122, decodeTokens: 40, decodeTokS: 328, ttftMs: 1720, cache: 'miss',
};

test('the badge: L → B (ratio), prefill, snap and decode times, cache outcome', () => {
  assert.equal(badgeText(stats), 'L 2,004 → B 1,024 (0.51) · prefill 1.6 s · snap 17 ms · decode 122 ms · cache miss');
  assert.equal(badgeText({ ...stats, B: 300, L: 300, ratio: 1, snap: false, cache: 'hit' }), 'L 300 → B 300 (full attention) · prefill 1.6 s · snap 17 ms · decode 122 ms · cache hit');
  assert.equal(
    badgeText({ ...stats, droppedTurns: 3 }),
    'L 2,004 → B 1,024 (0.51) · prefill 1.6 s · snap 17 ms · decode 122 ms · cache miss · 3 oldest turns left out',
  );
  assert.equal(formatMs(125_000), '2 min 5 s');
});

test('the page: strict CSP with a nonce, nothing remote, the script carries the nonce', () => {
  const csp = contentSecurityPolicy('https://file+.vscode-resource.vscode-cdn.net', 'N0nce');
  assert.match(csp, /^default-src 'none'; /);
  assert.match(csp, /script-src 'nonce-N0nce'/);
  assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval') && !csp.includes('http:') && !csp.includes('*'), csp);
  const html = webviewHtml({ cspSource: 'vscode-resource:', title: 'T', scriptUri: 'vscode-resource:/chat.js', styleUris: ['vscode-resource:/chat.css'], body: '<div id="app"></div>', nonce: 'N0nce' });
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;|<meta http-equiv="Content-Security-Policy" content="default-src 'none'/);
  assert.match(html, /<script nonce="N0nce" src="vscode-resource:\/chat.js"><\/script>/);
  assert.equal((html.match(/<script/g) ?? []).length, 1, 'one script, no inline code');
});
