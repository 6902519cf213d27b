/**
 * The streamed answer on a terminal (src/cli/terminal-text.ts): model output that copies terminal
 * control sequences from a repository (colours, cursor moves, OSC 8 links, OSC 52 clipboard
 * writes, DCS strings, bells, backspaces, carriage returns) is neutralised before it reaches
 * stdout, also when a sequence arrives split over two pieces; and the answer's last line is
 * ended before an error or "cancelled" is printed. Expected outputs are written out by hand.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { AnswerWriter } from '../../src/cli/ask';
import { ControlFilter, controlPolicy, escapeControls, MAX_HELD, neutralizeControls, quotePath, terminalJson, type ControlPolicy } from '../../src/cli/terminal-text';

const ESC = '\u001b';
const BEL = '\u0007';
const ST = `${ESC}\\`;

/** A hostile answer: one of each kind of sequence and control, with the text around them. */
const HOSTILE = [
  `Use ${ESC}[31mred${ESC}[0m and `, // CSI SGR
  `${ESC}]8;;https://evil.example/x${BEL}a link${ESC}]8;;${BEL}, `, // OSC 8 hyperlink, BEL-terminated
  `${ESC}]52;c;cm0gLXJmIH4vKg==${ST}`, // OSC 52 clipboard write, ST-terminated
  `${ESC}P1$r0m${ST}`, // DCS string
  `${ESC}_apc payload${ST}`, // APC string
  `\u009b2J`, // 8-bit CSI: clear the screen
  `${ESC}7${ESC}8`, // two-byte escapes: save and restore the cursor
  `safe\rover\bX${BEL}\ttab\r\n`, // carriage return, backspace, bell, tab, CRLF
  `end \u0085next`, // a C1 control (NEL)
].join('');

/** By hand: every sequence removed; on a terminal every control but \t and \n too. */
const EXPECTED: Record<Exclude<ControlPolicy, 'raw'>, string> = {
  tty: 'Use red and a link, safeoverX\ttab\nend next',
  pipe: `Use red and a link, safe\rover\bX${BEL}\ttab\r\nend next`,
};

test('neutralizeControls: whole sequences removed; on a terminal the other controls but \\n and \\t too; raw keeps everything', () => {
  assert.equal(neutralizeControls(HOSTILE, 'tty'), EXPECTED.tty);
  assert.equal(neutralizeControls(HOSTILE, 'pipe'), EXPECTED.pipe);
  assert.equal(neutralizeControls(HOSTILE, 'raw'), HOSTILE);
  // ordinary text, Unicode and code pass unchanged
  const code = 'const re = /\\x1b\\[/; // «ESC» → 🙂\n\tif (a < b && c > d) return `${x}`;\n';
  for (const p of ['tty', 'pipe'] as const) assert.equal(neutralizeControls(code, p), code);
  // a lone ESC or an unfinished sequence is not a sequence: its introducer goes, the text stays
  assert.equal(neutralizeControls(`a${ESC}zb${ESC}]0;title`, 'pipe'), 'azb]0;title');
});

test('ControlFilter: a sequence split over two pieces at any point is removed whole', () => {
  for (const policy of ['tty', 'pipe'] as const) {
    // every split into two pieces, and one code unit per piece
    for (let i = 0; i <= HOSTILE.length; i++) {
      const f = new ControlFilter(policy);
      const out = f.push(HOSTILE.slice(0, i)) + f.push(HOSTILE.slice(i)) + f.end();
      assert.equal(out, EXPECTED[policy], `${policy}, split at ${i}: ${JSON.stringify(HOSTILE.slice(Math.max(0, i - 4), i + 4))}`);
    }
    const f = new ControlFilter(policy);
    let out = '';
    for (const c of HOSTILE) out += f.push(c);
    assert.equal(out + f.end(), EXPECTED[policy], `${policy}, one code unit per piece`);
  }
});

test('ControlFilter holds back only what could still be a sequence, and at most MAX_HELD code units', () => {
  const f = new ControlFilter('tty');
  assert.equal(f.push('plain text '), 'plain text ', 'no introducer: written at once');
  assert.equal(f.push(`colour ${ESC}[3`), 'colour ', 'an unfinished CSI is held');
  assert.equal(f.push('1mred'), 'red');
  assert.equal(f.push(`${ESC}]8;;https://a.example/`), '', 'an unfinished OSC is held');
  assert.equal(f.push(`${BEL}link`), 'link');
  assert.equal(f.push(`${ESC}z done`), 'z done', 'ESC z can never be a sequence: not held (the ESC is removed)');
  assert.equal(f.end(), '');
  // an OSC that never ends is let through as text once it passes MAX_HELD, never swallowing the answer
  const g = new ControlFilter('pipe');
  const payload = 'x'.repeat(MAX_HELD);
  assert.equal(g.push(`${ESC}]52;c;`), '');
  assert.equal(g.push(payload), `]52;c;${payload}`);
  assert.equal(g.end(), '');
  // raw holds nothing back
  assert.equal(new ControlFilter('raw').push(`${ESC}[3`), `${ESC}[3`);
});

test('controlPolicy: --raw wins; else a terminal gets tty, a pipe or file gets pipe', () => {
  assert.equal(controlPolicy(true, false), 'tty');
  assert.equal(controlPolicy(false, false), 'pipe');
  assert.equal(controlPolicy(undefined, false), 'pipe');
  assert.equal(controlPolicy(true, true), 'raw');
});

test('bidirectional controls (Trojan Source) are removed from the answer on a terminal and in a pipe, kept with --raw, also one per streamed piece', () => {
  // CVE-2021-42574's example: shown on a terminal that applies the bidi algorithm, the comment
  // seems to close the condition; every one of the nine controls and the three marks occurs
  const trojan = 'if (accessLevel != "user\u202e \u2066// Check if admin\u2069 \u2066") {\n';
  const others = 'a\u202ab\u202bc\u202cd\u202de\u2067f\u2068g\u200eh\u200fi\u061cj\n';
  const shown = 'if (accessLevel != "user // Check if admin ") {\n' + 'abcdefghij\n';
  for (const p of ['tty', 'pipe'] as const) {
    assert.equal(neutralizeControls(trojan + others, p), shown, p);
    const f = new ControlFilter(p);
    const pieces = [...(trojan + others)].map((c) => f.push(c)).join('') + f.end();
    assert.equal(pieces, shown, `${p}, one character per piece`);
  }
  assert.equal(neutralizeControls(trojan + others, 'raw'), trojan + others);
  // right-to-left text itself is not a control: Hebrew and Arabic letters pass
  assert.equal(neutralizeControls('שלום مرحبا\n', 'tty'), 'שלום مرحبا\n');
  // file names: quoted with the marks escaped as well
  assert.equal(quotePath('a\u200fb.ts'), '"a\\u200fb.ts"');
  assert.equal(escapeControls('x\u061cy\u200ez'), 'x\\u061cy\\u200ez');
});

test('terminalJson escapes DEL, C1 and bidirectional controls too, and parses back to the same value', () => {
  const value = { path: `a\u009b2J\u202eb${ESC}[0m\u007f`, n: 1 };
  const json = terminalJson(value);
  assert.equal(json, '{"path":"a\\u009b2J\\u202eb\\u001b[0m\\u007f","n":1}');
  assert.deepEqual(JSON.parse(json), value);
  const marks = { text: 'a\u200eb\u200fc\u061cd\u2069' };
  assert.equal(terminalJson(marks), '{"text":"a\\u200eb\\u200fc\\u061cd\\u2069"}');
  assert.deepEqual(JSON.parse(terminalJson(marks)), marks);
});

/** An AnswerWriter over a captured stream. */
function writer(policy: ControlPolicy) {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString('utf8')));
  return { w: new AnswerWriter(out, new ControlFilter(policy)), text: () => text };
}

test('AnswerWriter: an answer cut short ends its line before the error is printed; a whole answer ends with one newline', async () => {
  const cut = writer('tty');
  cut.w.write('The store is in src/ca');
  await cut.w.endLine();
  assert.equal(cut.text(), 'The store is in src/ca\n');

  const atEol = writer('tty');
  atEol.w.write('A whole line.\n');
  await atEol.w.endLine();
  assert.equal(atEol.text(), 'A whole line.\n', 'no blank line when the answer already ended one');

  const held = writer('tty');
  held.w.write(`text${ESC}[3`); // cut inside a sequence: an unfinished one is text without its ESC
  await held.w.endLine();
  assert.equal(held.text(), 'text[3\n');

  const nothing = writer('tty');
  await nothing.w.endLine();
  assert.equal(nothing.text(), '', 'no answer yet (cancelled during the prefill): nothing written');

  const whole = writer('pipe');
  whole.w.write(`line one\r\n${ESC}[1mline two`);
  await whole.w.close();
  assert.equal(whole.text(), 'line one\r\nline two\n');
});
