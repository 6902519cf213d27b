/**
 * bench/encoding-detect: how often `decodeText` (src/context/filter.ts) gets a file's text right
 * on a small labelled set, for a sweep of the detector's confidence threshold.
 *
 *   node --import tsx bench/encoding-detect.ts [--out bench/results/encoding-detect.json]
 *
 * The set: known strings (Latin prose and code comments, Russian, Japanese, Korean, simplified
 * and traditional Chinese) in four shapes each (prose; a source file whose comments hold the
 * strings, mostly ASCII; one short line; one word in a comment of a two-line source file), encoded to UTF-8 and to the legacy encodings their
 * authors used (windows-1252, windows-1251, koi8-r, shift_jis, euc-jp, euc-kr, gb18030, big5);
 * and binary files (a PNG and a WebAssembly module from this checkout, a ZIP and a gzip stream
 * built here, an SQLite header, their middle 8 KiB without the signature, raw deflate of text,
 * and noise of bytes 0x20..0xFF without a NUL). The legacy bytes come from inverting Node's
 * TextDecoder over every 1- and 2-byte sequence (no encoder library); the expected text is the
 * known string, or "binary". A sample is right when `decodeText` returns exactly the expected
 * text (binary: `ok: false`). Prints accuracy per encoding for each threshold.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { parseArgs } from 'node:util';
import { decodeText } from '../src/context/filter';

const ROOT = path.resolve(__dirname, '..');

const STRINGS: Record<string, string[]> = {
  latin: [
    'Le café est très chaud ; l’élève a reçu « 15 € » pour ses études à Besançon.',
    'Größenänderung fehlgeschlagen: Überprüfen Sie die Maße — Datei öffnen später.',
    'El niño comió piñata en la montaña; ¿dónde está el señor Muñoz?',
  ],
  'latin-short': ['café crème € naïve', 'El niño', 'Größe über Ärger'],
  russian: [
    'Привет, мир! Это проверка кодировки файла с русскими комментариями.',
    'Функция возвращает количество строк в таблице или ноль, если таблица пуста.',
    'Загрузка конфигурации завершилась ошибкой: файл не найден.',
  ],
  japanese: [
    'こんにちは、世界。この関数はファイルの文字コードを判定します。',
    '設定ファイルを読み込み、見つからない場合は既定値を使います。',
    'テーブルの行数を返す。空の場合はゼロを返す。',
  ],
  korean: [
    '안녕하세요, 세계. 이 함수는 파일의 인코딩을 확인합니다.',
    '설정 파일을 읽고 없으면 기본값을 사용합니다.',
    '테이블의 행 수를 반환합니다. 비어 있으면 0을 반환합니다.',
  ],
  chinese: [
    '你好，世界。这个函数用来检测文件的字符编码。',
    '读取配置文件，如果找不到就使用默认值。',
    '返回表中的行数，如果表为空则返回零。',
  ],
  traditional: [
    '你好，世界。這個函數用來檢測檔案的字元編碼。',
    '讀取設定檔，如果找不到就使用預設值。',
    '傳回表格中的列數，如果表格為空則傳回零。',
  ],
};

const ENCODINGS: Array<[string, keyof typeof STRINGS]> = [
  ['utf-8', 'latin'],
  ['utf-8', 'russian'],
  ['utf-8', 'japanese'],
  ['windows-1252', 'latin'],
  ['windows-1252', 'latin-short'],
  ['windows-1251', 'russian'],
  ['koi8-r', 'russian'],
  ['shift_jis', 'japanese'],
  ['euc-jp', 'japanese'],
  ['euc-kr', 'korean'],
  ['gb18030', 'chinese'],
  ['big5', 'traditional'],
];

// WHATWG index-windows-1252, bytes 0x80..0x9F (Node 20.18.3+ decodes windows-1252 as Latin-1:
// nodejs/node#60888, so its TextDecoder cannot be inverted for it).
const CP1252_HIGH = '€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8dŽ\x8f\x90‘’“”•–—˜™š›œ\x9džŸ';

/** char → bytes, from decoding every 1-byte and 2-byte sequence with TextDecoder. */
function encoderFor(encoding: string): (text: string) => Buffer {
  if (encoding === 'utf-8') return (text) => Buffer.from(text, 'utf8');
  const decoder = new TextDecoder(encoding, { fatal: true });
  const table = new Map<string, number[]>();
  if (encoding === 'windows-1252') for (let b = 0x80; b < 0xa0; b++) table.set(CP1252_HIGH[b - 0x80]!, [b]);
  const add = (seq: number[]): void => {
    let s: string;
    try {
      s = decoder.decode(new Uint8Array(seq));
    } catch {
      return;
    }
    if ([...s].length === 1 && !table.has(s)) table.set(s, seq);
  };
  for (let b = 0; b < 0x100; b++) add([b]);
  for (let a = 0x81; a < 0xff; a++) for (let b = 0x40; b < 0xff; b++) add([a, b]);
  return (text) => {
    const out: number[] = [];
    for (const ch of text) {
      const seq = table.get(ch);
      if (seq === undefined) throw new Error(`${encoding} cannot encode ${JSON.stringify(ch)}`);
      out.push(...seq);
    }
    return Buffer.from(out);
  };
}

/** The three shapes of file a string appears in. */
function shapes(strings: string[]): Array<[string, string]> {
  const prose = strings.join('\n') + '\n';
  const code =
    'import { readFile } from "node:fs/promises";\n\n' +
    strings
      .map((s, i) => `// ${s}\nexport async function step${i}(path: string): Promise<number> {\n  const text = await readFile(path, "utf8");\n  return text.split("\\n").length + ${i};\n}\n`)
      .join('\n');
  const word = strings[0]!.split(/[\s,、，。.!]+/).find((w) => /[^\x00-\x7f]/.test(w))!;
  return [
    ['prose', prose],
    ['code', code],
    ['line', strings[0]! + '\n'],
    ['word', `export const greeting = "hello"; // ${word}\nexport const n = 1;\n`],
  ];
}

/** A one-entry ZIP archive (stored), built by hand: local header, data, central directory, end. */
function zipOf(name: string, data: Buffer): Buffer {
  const crc = zlib.crc32 !== undefined ? zlib.crc32(data) : 0;
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt32LE(crc >>> 0, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(name.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt32LE(crc >>> 0, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(name.length, 28);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(46 + name.length, 12);
  end.writeUInt32LE(30 + name.length + data.length, 16);
  return Buffer.concat([local, Buffer.from(name), data, central, Buffer.from(name), end]);
}

/** Deterministic noise of bytes 0x20..0xFF (xorshift32). */
function noise(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = 0x20 + ((x >>> 0) % 0xe0);
  }
  return out;
}

interface Sample {
  label: string;
  bytes: Buffer;
  /** The expected text, or undefined for binary. */
  text: string | undefined;
}

function samples(): Sample[] {
  const out: Sample[] = [];
  for (const [encoding, lang] of ENCODINGS) {
    const encode = encoderFor(encoding);
    for (const [shape, text] of shapes(STRINGS[lang]!)) out.push({ label: `${encoding}/${lang}/${shape}`, bytes: encode(text), text });
  }
  const png = fs.readFileSync(path.join(ROOT, 'bench/results/fidelity.png'));
  const wasm = fs.readFileSync(path.join(ROOT, 'node_modules/@vscode/tree-sitter-wasm/wasm/tree-sitter-typescript.wasm'));
  const source = fs.readFileSync(path.join(ROOT, 'src/context/filter.ts'));
  const zip = zipOf('filter.ts', zlib.deflateRawSync(source));
  const gzip = zlib.gzipSync(source);
  const sqlite = Buffer.concat([Buffer.from('SQLite format 3\u0000', 'latin1'), Buffer.from([0x10, 0x00, 0x01, 0x01, 0x00, 0x40, 0x20, 0x20]), Buffer.alloc(4072)]);
  const middle = (b: Buffer): Buffer => b.subarray(Math.min(4096, b.length >> 2), Math.min(4096, b.length >> 2) + 8192);
  for (const [name, bytes] of Object.entries({ png, wasm, zip, gzip, sqlite })) {
    out.push({ label: `binary/${name}`, bytes, text: undefined });
    out.push({ label: `binary/${name}-middle`, bytes: middle(bytes), text: undefined });
  }
  out.push({ label: 'binary/deflate', bytes: zlib.deflateRawSync(source), text: undefined });
  for (const [i, n] of [64, 512, 4096].entries()) out.push({ label: `binary/noise-${n}`, bytes: noise(n, 0x9e3779b9 + i), text: undefined });
  return out;
}

function main(): void {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const set = samples();
  const thresholds = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
  const rows: Array<Record<string, unknown>> = [];
  for (const threshold of thresholds) {
    let right = 0;
    const wrong: string[] = [];
    const byGroup = new Map<string, [number, number]>();
    for (const s of set) {
      const r = decodeText(s.bytes, { minConfidence: threshold } as Parameters<typeof decodeText>[1]);
      const ok = s.text === undefined ? !r.ok : r.ok && r.text === s.text;
      const group = s.label.split('/').slice(0, s.label.startsWith('binary/') ? 1 : 2).join('/');
      const g = byGroup.get(group) ?? [0, 0];
      byGroup.set(group, [g[0] + (ok ? 1 : 0), g[1] + 1]);
      if (ok) right++;
      else wrong.push(`${s.label} → ${r.ok ? `${r.encoding} (${r.notes.join('; ')})` : `binary (${r.detail})`}`);
    }
    const groups = Object.fromEntries([...byGroup].map(([k, [a, n]]) => [k, `${a}/${n}`]));
    rows.push({ threshold, right, total: set.length, groups, wrong });
    console.log(`threshold ${String(threshold).padStart(3)}: ${right}/${set.length}  ${Object.entries(groups).map(([k, v]) => `${k} ${v}`).join('  ')}`);
    for (const w of wrong) console.log(`    wrong: ${w}`);
  }
  if (values.out !== undefined) fs.writeFileSync(values.out, JSON.stringify({ node: process.version, samples: set.length, rows }, null, 1) + '\n');
}

main();
