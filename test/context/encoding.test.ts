/**
 * Legacy encodings: a file that is not UTF-8 is decoded from the encoding the detector names
 * (src/context/encoding.ts), not taken as Windows-1252. The byte fixtures are the known strings
 * encoded by Python's codecs (`str.encode('shift_jis' | 'cp1251' | 'euc_kr' | 'gb18030')`), an
 * implementation independent of ICU's, written here as hex.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeText, readTextFile } from '../../src/context/filter';
import { decodeLegacy } from '../../src/context/encoding';
import { makeRepo } from './fixtures';
import * as path from 'node:path';

const hex = (s: string): Buffer => Buffer.from(s, 'hex');

const SHIFT_JIS_TEXT = '// こんにちは、世界。この関数はファイルの文字コードを判定します。\n// 設定ファイルを読み込み、見つからない場合は既定値を使います。\nexport const x = 1;\n';
const SHIFT_JIS = hex(
  '2f2f2082b182f182c982bf82cd814190a28a45814282b182cc8ad6909482cd837483408343838b82cc95b68e9a8352815b836882f094bb92e882b582dc82b781420a2f2f2090dd92e8837483408343838b82f093c782dd8d9e82dd81418ca982c282a982e782c882a28fea8d8782cd8af992e8926c82f08e6782a282dc82b781420a6578706f727420636f6e73742078203d20313b0a',
);
const CP1251_TEXT = '// Привет, мир! Это проверка кодировки файла с русскими комментариями.\n// Функция возвращает количество строк в таблице.\nexport const x = 1;\n';
const CP1251 = hex(
  '2f2f20cff0e8e2e5f22c20ece8f02120ddf2ee20eff0eee2e5f0eae020eaeee4e8f0eee2eae820f4e0e9ebe020f120f0f3f1f1eae8ece820eaeeecece5edf2e0f0e8ffece82e0a2f2f20d4f3edeaf6e8ff20e2eee7e2f0e0f9e0e5f220eaeeebe8f7e5f1f2e2ee20f1f2f0eeea20e220f2e0e1ebe8f6e52e0a6578706f727420636f6e73742078203d20313b0a',
);
const EUC_KR_TEXT = '// 안녕하세요, 세계. 이 함수는 파일의 인코딩을 확인합니다.\n// 설정 파일을 읽고 없으면 기본값을 사용합니다.\nexport const x = 1;\n';
const EUC_KR = hex(
  '2f2f20bec8b3e7c7cfbcbcbfe42c20bcbcb0e82e20c0cc20c7d4bcf6b4c220c6c4c0cfc0c720c0cec4dab5f9c0bb20c8aec0cec7d5b4cfb4d92e0a2f2f20bcb3c1a420c6c4c0cfc0bb20c0d0b0ed20bef8c0b8b8e920b1e2babbb0aac0bb20bbe7bfebc7d5b4cfb4d92e0a6578706f727420636f6e73742078203d20313b0a',
);
const GB18030_TEXT = '// 你好，世界。这个函数用来检测文件的字符编码。\n// 读取配置文件，如果找不到就使用默认值。\nexport const x = 1;\n';
const GB18030 = hex(
  '2f2f20c4e3bac3a3accac0bde7a1a3d5e2b8f6baafcafdd3c3c0b4bcecb2e2cec4bcfeb5c4d7d6b7fbb1e0c2eba1a30a2f2f20b6c1c8a1c5e4d6c3cec4bcfea3acc8e7b9fbd5d2b2bbb5bdbecdcab9d3c3c4acc8cfd6b5a1a30a6578706f727420636f6e73742078203d20313b0a',
);

test('a Shift_JIS source file (with the byte 0x81) is decoded as Shift_JIS, not called binary', () => {
  assert.ok(SHIFT_JIS.includes(0x81));
  const r = decodeText(SHIFT_JIS);
  assert.ok(r.ok);
  assert.equal(r.text, SHIFT_JIS_TEXT);
  assert.equal(r.encoding, 'shift_jis');
  assert.match(r.notes[0]!, /^not valid UTF-8 \(byte 0x82 at offset 3\); decoded as Shift_JIS \(detected, confidence \d+\)$/);
});

test('a CP1251 file is decoded as Windows-1251 (Привет, not Ïðèâåò)', () => {
  const r = decodeText(CP1251);
  assert.ok(r.ok);
  assert.equal(r.text, CP1251_TEXT);
  assert.equal(r.encoding, 'windows-1251');
  assert.match(r.notes[0]!, /^not valid UTF-8 \(byte 0xCF at offset 3\); decoded as Windows-1251 \(detected, confidence \d+\)$/);
});

test('EUC-KR and GB18030 files are decoded from their encodings', () => {
  const kr = decodeText(EUC_KR);
  assert.ok(kr.ok);
  assert.equal(kr.encoding, 'euc-kr');
  assert.equal(kr.text, EUC_KR_TEXT);
  const gb = decodeText(GB18030);
  assert.ok(gb.ok);
  assert.equal(gb.encoding, 'gb18030');
  assert.equal(gb.text, GB18030_TEXT);
});

test('a prefix cut inside a double-byte character decodes up to the cut', () => {
  // cut after the lead byte 0x81 of the last "。" of the second line (0x81 0x42, then LF)
  const cut = SHIFT_JIS.lastIndexOf(0x0a, SHIFT_JIS.length - 2) - 1;
  assert.equal(SHIFT_JIS[cut - 1], 0x81);
  const r = decodeText(SHIFT_JIS.subarray(0, cut), { truncated: true });
  assert.deepEqual(r.ok && { text: r.text, encoding: r.encoding }, { text: SHIFT_JIS_TEXT.slice(0, SHIFT_JIS_TEXT.indexOf('。\nexport')), encoding: 'shift_jis' });
});

test('decodeLegacy loses nothing: a byte with no character in the encoding fails the decoding', () => {
  // 0x98 is undefined in windows-1251; 0x81 0x7F is not a Shift_JIS character; 0xA4 at the end is half an EUC-KR one
  assert.equal(decodeLegacy(Buffer.from([0x41, 0x98, 0x42]), 'windows-1251'), undefined);
  assert.equal(decodeLegacy(Buffer.from([0x41, 0x81, 0x7f]), 'shift_jis'), undefined);
  assert.equal(decodeLegacy(Buffer.from([0xbe, 0xc8, 0xa4]), 'euc-kr'), undefined);
  assert.equal(decodeLegacy(Buffer.from([0xbe, 0xc8]), 'euc-kr'), '안');
  // Windows-1252 from the table, not TextDecoder (Node 20.18.3+ decodes it as Latin-1: 0x92 → U+0092)
  assert.equal(decodeLegacy(Buffer.from([0x92, 0x80, 0x9f]), 'windows-1252'), '\u2019€Ÿ');
  assert.equal(decodeLegacy(Buffer.from([0x41, 0x81]), 'windows-1252'), undefined);
});

test('binary bytes stay binary: signatures, NUL, control bytes, noise of high bytes', () => {
  assert.deepEqual(decodeText(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x82, 0xb1])), { ok: false, detail: 'PNG signature' });
  assert.deepEqual(decodeText(Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00])), { ok: false, detail: 'NUL byte at offset 0' });
  assert.deepEqual(decodeText(Buffer.from([0x82, 0xb1, 0x02, 0x82, 0xf1])), { ok: false, detail: 'not UTF-8 (byte 0x82 at offset 0) and not text (control byte 0x02 at offset 2)' });
  // xorshift noise of bytes 0x20..0xFF: the detector's best guess is below the threshold, and
  // it holds bytes Windows-1252 leaves undefined
  const noise = Buffer.alloc(4096);
  let x = 0x9e3779b9 + 2;
  for (let i = 0; i < noise.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    noise[i] = 0x20 + ((x >>> 0) % 0xe0);
  }
  const r = decodeText(noise);
  assert.equal(r.ok, false);
  assert.match((r as { detail: string }).detail, /no encoding detected \(best guess [^,]+, confidence [0-9]\) and not Windows-1252 text/);
});

test('readTextFile reports the detected encoding and the note for the manifest', async (t) => {
  const root = await makeRepo(t, { 'sjis.ts': SHIFT_JIS, 'ru.ts': CP1251 });
  const sjis = await readTextFile(path.join(root, 'sjis.ts'));
  assert.equal(sjis.kind, 'text');
  assert.equal(sjis.kind === 'text' && sjis.encoding, 'shift_jis');
  assert.equal(sjis.kind === 'text' && sjis.text, SHIFT_JIS_TEXT);
  const ru = await readTextFile(path.join(root, 'ru.ts'));
  assert.equal(ru.kind === 'text' && ru.text, CP1251_TEXT);
});
