/**
 * The chat's Context line (issue 14, section 4), the logic outside the browser: what a thread
 * stores per answer is bounded (files capped, details cut, older answers keep only the summary),
 * and the line renders — parsed back with cheerio — to a closed <details> whose summary reads
 * "Packed … · SnapKV kept … per head (…)", with short forms for a narrow sidebar, the L → B
 * badge inside, file rows sorted by kept share (a link that opens the file, tokens, a meter of
 * the share), the files left out and why, every text escaped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as cheerio from 'cheerio';
import { chatContext, contextLineHtml, MAX_DETAIL_CHARS, withoutFiles, type ChatContext } from '../../src/chat/context-line';
import type { AnswerStats, ChatMessage } from '../../src/chat/protocol';
import { MAX_CONTEXT_LISTS, ThreadStore } from '../../src/chat/threads';
import type { ContextReport } from '../../src/pipeline/context-report';

const stats: AnswerStats = {
  L: 12_800, B: 1024, ratio: 1024 / 12_800, snap: true, files: 4, packMs: 93, prefillMs: 1606.2, prefillTokS: 1247.7, snapMs: 17.49,
  decodeMs: 122, decodeTokens: 40, decodeTokS: 328, ttftMs: 1720, cache: 'miss',
};

/** Four packed files (prompt order) and three left out, as the pipeline reports them. */
const REPORT: ContextReport = {
  summary: { packedFiles: 4, totalFiles: 7, ignored: 2, fileTokens: 12_480, promptTokens: 12_800, attention: 'snapkv', keptPerHead: 1024, keptRatio: 0.08 },
  files: [
    { path: 'src/a.ts', status: 'full', tokens: 4000, keptShare: 0.05 },
    { path: 'src/<b>.ts', status: 'full', tokens: 480, keptShare: 0.25 },
    { path: 'src/c.ts', status: 'full', tokens: 6000, keptShare: 0.004 },
    { path: 'README.md', status: 'full', tokens: 2000, keptShare: 0.25 },
    { path: 'big.ts', status: 'left-out', tokens: 0, keptShare: null, reason: 'over-budget', detail: 'needs 9000 tokens, 20 of 12500 left (larger files are dropped first)' },
    { path: 'logo.png', status: 'left-out', tokens: 0, keptShare: null, reason: 'binary', detail: "binary file extension '.png'" },
    { path: 'gen.ts', status: 'left-out', tokens: 0, keptShare: null, reason: 'generated', detail: 'x'.repeat(300) },
  ],
  sections: [],
};

test('chatContext: the files in the prompt by kept share (ties in prompt order), then the left-out ones; lists capped, details cut', () => {
  const all = chatContext(REPORT);
  assert.deepEqual(all.files.map((f) => f.path), ['src/<b>.ts', 'README.md', 'src/a.ts', 'src/c.ts', 'big.ts', 'logo.png', 'gen.ts']);
  assert.equal(all.unlisted, undefined);
  assert.equal(all.files[6]!.detail, `${'x'.repeat(MAX_DETAIL_CHARS - 1)}…`);
  assert.equal(REPORT.files[6]!.detail!.length, 300, 'the report itself is not changed');

  const capped = chatContext(REPORT, 2, 1);
  assert.deepEqual(capped.files.map((f) => f.path), ['src/<b>.ts', 'README.md', 'big.ts']);
  assert.deepEqual(capped.unlisted, { full: 2, 'left-out': 2 });
  assert.deepEqual(withoutFiles(capped), { summary: REPORT.summary, files: [], unlisted: { full: 4, 'left-out': 3 } });
});

test('the Context line: a closed details whose summary reads the packed files and what SnapKV kept, long and short', () => {
  const $ = cheerio.load(contextLineHtml(stats, chatContext(REPORT)));
  const details = $('details.context');
  assert.equal(details.length, 1);
  assert.equal(details.attr('open'), undefined, 'collapsed');
  const summary = details.children('summary.context-line');
  assert.equal(summary.attr('title'), 'Packed 4 of 7 files (12,480 tokens) · SnapKV kept 1,024 per head (8 %)');
  assert.equal(summary.find('.context-title').text(), 'Context');
  assert.deepEqual(summary.find('.wide').map((_, e) => $(e).text()).get(), ['Packed 4 of 7 files (12,480 tokens)', 'SnapKV kept 1,024 per head (8 %)']);
  assert.deepEqual(summary.find('.narrow').map((_, e) => $(e).text()).get(), ['4/7 files', 'kept 8 %']);
  // the L → B badge moved into the line
  assert.equal(details.find('.context-body > .badge.cache-miss').text(), 'L 12,800 → B 1,024 (0.08) · prefill 1.6 s · snap 17 ms · decode 122 ms · cache miss');
  assert.equal(cheerio.load(contextLineHtml(stats, chatContext(REPORT), true))('details').attr('open'), 'open');
});

test('the Context line expands to file rows sorted by kept share (link, tokens, share bar), then the files left out and why', () => {
  const $ = cheerio.load(contextLineHtml(stats, chatContext(REPORT)));
  const rows = $('ul.context-files > li.context-file')
    .map((_, li) => {
      const r = $(li);
      const link = r.find('a.file-link');
      return [[link.attr('data-path'), link.find('.context-name').text(), link.find('.context-dir').text(), r.find('.context-tokens').text(), r.find('meter.context-bar').attr('value'), r.find('.context-share').text()]];
    })
    .get();
  assert.deepEqual(rows, [
    ['src/<b>.ts', '<b>.ts', 'src', '480', '0.25', '25 %'],
    ['README.md', 'README.md', '', '2,000', '0.25', '25 %'],
    ['src/a.ts', 'a.ts', 'src', '4,000', '0.05', '5 %'],
    ['src/c.ts', 'c.ts', 'src', '6,000', '0.004', '0.4 %'],
  ]);
  assert.equal($('meter.context-bar').first().attr('min'), '0');
  assert.equal($('meter.context-bar').first().attr('max'), '1');
  assert.equal($('.context-heading').text(), 'Left out (3)');
  assert.deepEqual(
    $('ul.context-left > li').map((_, li) => $(li).text()).get(),
    [
      'big.ts did not fit the context — needs 9000 tokens, 20 of 12500 left (larger files are dropped first)',
      "logo.png binary — binary file extension '.png'",
      `gen.ts generated — ${'x'.repeat(MAX_DETAIL_CHARS - 1)}…`,
    ],
  );
  assert.equal($('.context-more').length, 0);
});

test('the Context line escapes paths and says how many files are not listed', () => {
  const html = contextLineHtml(stats, chatContext(REPORT, 1, 1));
  assert.ok(!html.includes('<b>'), 'a path cannot inject markup');
  assert.ok(html.includes('src/&lt;b&gt;.ts'));
  const $ = cheerio.load(html);
  assert.deepEqual($('.context-more').map((_, e) => $(e).text()).get(), ['and 3 more (reposnap ask --show-context lists all)', 'and 2 more (reposnap ask --show-context lists all)']);
  assert.equal($('.context-heading').text(), 'Left out (3)');
  const older = cheerio.load(contextLineHtml(stats, withoutFiles(chatContext(REPORT))));
  assert.deepEqual(older('.context-more').map((_, e) => older(e).text()).get(), ['4 files, not listed for older answers', '3 files, not listed for older answers']);
});

test('full attention, a continued thread, and an answer saved before the Context line', () => {
  const full: ChatContext = { summary: { ...REPORT.summary, attention: 'full', keptPerHead: 12_800, keptRatio: 1 }, files: [{ path: 'a.ts', status: 'full', tokens: 10, keptShare: 1 }] };
  const $f = cheerio.load(contextLineHtml({ ...stats, snap: false, B: 12_800, ratio: 1 }, full));
  assert.equal($f('summary').attr('title'), 'Packed 4 of 7 files (12,480 tokens) · full attention (all 12,800 kept)');
  assert.deepEqual($f('.narrow').map((_, e) => $f(e).text()).get(), ['4/7 files', 'full attention']);
  assert.equal($f('.context-share').text(), '100 %');

  const cont: ChatContext = { summary: { ...REPORT.summary, attention: 'continued', keptPerHead: null, keptRatio: null }, files: [{ path: 'a.ts', status: 'full', tokens: 10, keptShare: null }] };
  const $c = cheerio.load(contextLineHtml({ ...stats, cache: 'continue' }, cont));
  assert.equal($c('summary').attr('title'), "Packed 4 of 7 files (12,480 tokens) · continued the thread's SnapKV cache");
  assert.equal($c('meter').length, 0, 'no bar for a share not known');
  assert.equal($c('.context-share').text(), '?');

  const $l = cheerio.load(contextLineHtml({ ...stats, L: 2004, ratio: 1024 / 2004 }));
  assert.equal($l('summary').attr('title'), '4 files packed · SnapKV kept 1,024 per head (51 %)');
  assert.deepEqual($l('.narrow').map((_, e) => $l(e).text()).get(), ['4 files packed', 'kept 51 %']);
  assert.equal($l('.badge').length, 1);
  assert.equal($l('.context-files, .context-left').length, 0);
});

test('the ranked packing: the file tree and the repository map follow the files as rows of their own, without a link', () => {
  const ranked: ContextReport = { ...REPORT, sections: [{ kind: 'tree', tokens: 120, keptShare: 0.5 }, { kind: 'map', tokens: 900, keptShare: 0.02 }] };
  const $ = cheerio.load(contextLineHtml(stats, chatContext(ranked)));
  const rows = $('ul.context-files > li.context-section')
    .map((_, li) => [[$(li).find('.context-name').text(), $(li).find('a').length, $(li).find('.context-tokens').text(), $(li).find('meter').attr('value'), $(li).find('.context-share').text()]])
    .get();
  assert.deepEqual(rows, [
    ['file tree', 0, '120', '0.5', '50 %'],
    ['repository map', 0, '900', '0.02', '2 %'],
  ]);
  assert.equal($('ul.context-files > li').length, 6, 'four files, then the two sections');
  assert.deepEqual(withoutFiles(chatContext(ranked)).sections, ranked.sections);
});

test('threads keep the file lists of the last answers only, and they survive a reload', () => {
  const saved = new Map<string, unknown>();
  const kv = { get: <T>(k: string) => saved.get(k) as T | undefined, update: async (k: string, v: unknown) => void saved.set(k, JSON.parse(JSON.stringify(v))) };
  const threads = new ThreadStore(kv);
  const id = threads.active.id;
  const answers = MAX_CONTEXT_LISTS + 2;
  for (let i = 0; i < answers; i++) {
    threads.add(id, { id: `q${i}`, role: 'user', text: `question ${i}` });
    threads.add(id, { id: `a${i}`, role: 'assistant', text: `answer ${i}` });
    threads.patch(id, `a${i}`, { stats, context: chatContext(REPORT) });
  }
  const reloaded = new ThreadStore(kv).get(id)!;
  const listed = reloaded.messages.filter((m): m is ChatMessage & { context: ChatContext } => !!m.context).map((m) => m.context.files.length);
  assert.deepEqual(listed, [0, 0, ...new Array<number>(MAX_CONTEXT_LISTS).fill(7)]);
  assert.deepEqual(reloaded.messages[1]!.context, withoutFiles(chatContext(REPORT)), 'the oldest answers keep their summary and counts');
});
