/**
 * bench/retrieval-recall: does the question-dependent retrieval find a definition's declaration
 * when the question names it? No model: for each definition of the files retrieval chunks (the
 * files a ranked pack leaves out of the full text), the question "Which file defines the <kind>
 * <Name>?" is ranked (`rankChunks`) and retrieved (`retrieveChunks`, the section's budget), and a
 * hit is a chunk that holds the definition's declaration line (its name's line, as tree-sitter
 * tags it: `Definition.line`) of a file defining that name with that kind.
 *
 *   node --import tsx bench/retrieval-recall.ts --real DIR [--context-size 6144] [--share 0.15] [--max 400] [--include GLOB]… [--names A,B] [--code-span] [--doc] [--out FILE]
 *
 * The repository is packed once, ranked, with the approximate tokenizer (bytes / 4) and the
 * prefix budget the CLI gives a context of `--context-size` tokens with `--share` of it for
 * retrieval (context − retrieval room − the 512-token answer room). The ground truth comes from
 * the tags of each chunked file, parsed again here with `createTagsParser` from its text on disk,
 * independent of how `chunksOf` cuts it. Definitions: kinds class, interface, type, function and
 * method, names of 3 characters or more defined (with that kind) in at most 3 files (`toString`,
 * `constructor` ask nothing answerable); at most `--max` of them, spread evenly in path order.
 * `--include` (repeatable) packs only the matching files, as `packRepository`'s `include` (a
 * bench/repoqa/large package's own sources: `--include /lib/ --include /pino.js`); `--names`
 * asks only about the askable definitions with these names (held-out misses such as axios's
 * `shouldBypassProxy`, ~372 tokens, at a 2,048-token context's 307-token room); `--code-span`
 * spells the name in backticks ("Which file defines the function `redaction`?"), as
 * bench/repoqa/large's questions do, so that `namedIdentifiers` recognizes a plain-word name.
 * `--doc` asks instead, for each askable function and method with a doc comment directly above
 * it (`docSentence`: a JSDoc block, a run of `//` or `#` lines, decorators between skipped), its
 * first sentence with the name removed: "Which function compares two levels?" (bench/repoqa/large's
 * 'doc' questions describe a function in its comment's words); the others are not asked.
 * Prints recall@1/3/10 of the ranking and the recall of the section (a hit quoted within the
 * budget), per kind and in all, and writes them with each question's first hit (1-based rank) as JSON (default
 * bench/results/retrieval-recall-<the repository's folder name>.json).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { grammarForPath } from '../src/context/map/languages';
import { createTagsParser, type Definition } from '../src/context/map/tags';
import { packRepository } from '../src/context/pack';
import { namedIdentifiers, rankChunks } from '../src/context/retrieve/bm25';
import type { Chunk } from '../src/context/retrieve/chunks';
import { retrieveChunks } from '../src/context/retrieve/retrieve';

/** The kinds asked about, with the word the question uses. */
const KINDS: Readonly<Record<string, string>> = { class: 'class', interface: 'interface', type: 'type', function: 'function', method: 'method' };
/** Answer room the CLI keeps out of the prefix [tokens]. */
const ANSWER_ROOM = 512;
const AT = [1, 3, 10] as const;

interface Row {
  kind: string;
  questions: number;
  /** Questions whose name `namedIdentifiers` recognizes (compound identifiers). */
  named: number;
  recallAt: Record<string, number>;
  section: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      real: { type: 'string' },
      'context-size': { type: 'string', default: '6144' },
      share: { type: 'string', default: '0.15' },
      max: { type: 'string', default: '400' },
      include: { type: 'string', multiple: true },
      names: { type: 'string' },
      'code-span': { type: 'boolean', default: false },
      doc: { type: 'boolean', default: false },
      out: { type: 'string' },
    },
  });
  if (values.real === undefined) throw new Error('--real DIR is required: the repository to pack (e.g. node_modules/ajv or .)');
  const root = path.resolve(values.real);
  const contextSize = Number(values['context-size']);
  const room = Math.floor(contextSize * Number(values.share));
  const countTokens = (t: string): number => Math.ceil(Buffer.byteLength(t) / 4);
  const pack = await packRepository(root, { tokenBudget: contextSize - room - ANSWER_ROOM, countTokens, packing: 'ranked', ...(values.include !== undefined ? { include: values.include } : {}) });
  const chunks = pack.retrievable;
  const files = [...new Set(chunks.map((c) => c.path))];
  const parser = createTagsParser();
  const defs: Array<{ path: string; def: Definition }> = [];
  const docs = new Map<Definition, string>();
  for (const file of files) {
    const grammar = grammarForPath(file);
    if (grammar === undefined) continue;
    const text = fs.readFileSync(path.join(root, file), 'utf8').replace(/\r\n?/g, '\n');
    for (const def of (await parser.parse(text, grammar)).definitions) {
      if (!(def.kind in KINDS) || def.name.length < 3) continue;
      defs.push({ path: file, def });
      const sentence = values.doc && (def.kind === 'function' || def.kind === 'method') ? docSentence(text.split('\n'), def) : undefined;
      if (sentence !== undefined) docs.set(def, sentence);
    }
  }
  const definers = new Map<string, Array<{ path: string; def: Definition }>>();
  for (const d of defs) {
    const key = `${d.def.kind} ${d.def.name}`;
    definers.set(key, [...(definers.get(key) ?? []), d]);
  }
  const onlyNames = values.names === undefined ? undefined : new Set(values.names.split(',').filter((n) => n !== ''));
  const askable = [...definers.values()]
    .filter((ds) => new Set(ds.map((d) => d.path)).size <= 3 && (onlyNames === undefined || onlyNames.has(ds[0]!.def.name)))
    .map((ds) => ds[0]!)
    .filter((d) => !values.doc || docs.has(d.def));
  askable.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.def.line - b.def.line));
  const max = Number(values.max);
  const chosen = askable.length <= max ? askable : Array.from({ length: max }, (_, i) => askable[Math.floor((i * askable.length) / max)]!);
  const holds = (c: Chunk, d: { path: string; def: Definition }): boolean => c.path === d.path && c.startLine <= d.def.line && d.def.line <= c.endLine;
  const rows = new Map<string, Row>();
  const misses: string[] = [];
  const questions: Array<{ at: string; kind: string; name: string; firstHit: number | null; inSection: boolean; quoted?: string[] }> = [];
  for (const q of chosen) {
    const name = values['code-span'] ? `\`${q.def.name}\`` : q.def.name;
    const question = values.doc ? `Which function ${docs.get(q.def)!}?` : `Which file defines the ${KINDS[q.def.kind]} ${name}?`;
    const answers = definers.get(`${q.def.kind} ${q.def.name}`)!;
    const ranked = rankChunks(chunks, question);
    const firstHit = ranked.findIndex((r) => answers.some((a) => holds(r.chunk, a)));
    const retrieved = await retrieveChunks(chunks, question, { budget: room, countTokens, secrets: pack.secrets });
    const inSection = retrieved.chunks.some((c) => answers.some((a) => holds(c, a)));
    for (const kind of [q.def.kind, 'all']) {
      const row = rows.get(kind) ?? { kind, questions: 0, named: 0, recallAt: Object.fromEntries(AT.map((k) => [`@${k}`, 0])), section: 0 };
      row.questions++;
      if (namedIdentifiers(question).has(q.def.name)) row.named++;
      for (const k of AT) if (firstHit >= 0 && firstHit < k) row.recallAt[`@${k}`]!++;
      if (inSection) row.section++;
      rows.set(kind, row);
    }
    // with --names, the quoted chunks too (`path:first-last`, best first)
    const quoted = onlyNames === undefined ? {} : { quoted: retrieved.chunks.map((c) => `${c.path}:${c.startLine}-${c.endLine}`) };
    questions.push({ at: `${q.path}:${q.def.line}`, kind: q.def.kind, name: q.def.name, firstHit: firstHit < 0 ? null : firstHit + 1, inSection, ...quoted });
    if (onlyNames !== undefined) console.log(`${q.path}:${q.def.line} ${q.def.name}: first hit at rank ${firstHit < 0 ? '-' : firstHit + 1}, ${inSection ? 'in' : 'not in'} the section; quoted ${quoted.quoted!.join(', ') || 'nothing'} (${retrieved.tokens} tokens)`);
    if (!inSection) misses.push(`${q.path}:${q.def.line} ${q.def.kind} ${q.def.name} (first hit at rank ${firstHit < 0 ? '-' : firstHit + 1})`);
  }
  const order = [...Object.keys(KINDS), 'all'].filter((k) => rows.has(k));
  const table = order.map((k) => rows.get(k)!);
  const result = { meta: { repo: path.relative(process.cwd(), root) || '.', questions: values.doc ? 'doc' : 'name', date: new Date().toISOString(), contextSize, retrievalRoom: room, chunks: chunks.length, chunkedFiles: files.length, askable: askable.length, asked: chosen.length }, rows: table, misses, questions };
  const out = values.out ?? path.join('bench', 'results', `retrieval-recall-${path.basename(root)}${values.doc ? '-doc' : ''}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  console.log(`${result.meta.repo}: ${chunks.length} chunks of ${files.length} files not in full (context ${contextSize}, retrieval room ${room} tokens); ${chosen.length} of ${askable.length} askable definitions`);
  console.log('kind        questions  named  recall@1  recall@3  recall@10  in section');
  const pct = (n: number, of: number): string => `${((100 * n) / of).toFixed(1)} %`;
  for (const r of table) {
    console.log(`${r.kind.padEnd(11)} ${String(r.questions).padStart(9)} ${String(r.named).padStart(6)} ${AT.map((k) => pct(r.recallAt[`@${k}`]!, r.questions).padStart(k === 10 ? 10 : 9)).join('')} ${pct(r.section, r.questions).padStart(11)}`);
  }
  console.log(`misses (not in the section): ${misses.length}; first ones:`);
  for (const m of misses.slice(0, 12)) console.log(`  ${m}`);
}

/**
 * The first sentence of the doc comment directly above `def` (no blank line between; decorator,
 * annotation and attribute lines between skipped): a `/** … *\/` or `/* … *\/` block, or a run of
 * `//` or `#` lines, with comment marks and JSDoc tag lines (`@param`) removed, up to the first
 * `. ` or the comment's end, with every whole-word occurrence of the name removed and the first
 * letter lower-cased ("Compares two levels." → "compares two levels"). `undefined` when there is
 * no such comment or its sentence has fewer than 3 words. Found here from the text, independent of
 * how `chunksOf` attaches comments.
 */
function docSentence(lines: readonly string[], def: Definition): string | undefined {
  let i = def.line - 2;
  while (i >= 0 && /^\s*(?:@|#\[)/.test(lines[i]!)) i--;
  const above: string[] = [];
  if (i >= 0 && /\*\/\s*$/.test(lines[i]!)) {
    for (; i >= 0; i--) {
      above.unshift(lines[i]!);
      if (lines[i]!.includes('/*')) break;
    }
    if (i < 0) return undefined;
  } else {
    for (; i >= 0 && /^\s*(?:\/\/|#(?!\[|!))/.test(lines[i]!); i--) above.unshift(lines[i]!);
  }
  const words = above
    .map((l) => l.replace(/^\s*(?:\/\*+!?|\*+(?!\/)|\/\/+!?|#+)/, '').replace(/\*+\/\s*$/, '').trim())
    .filter((l) => !l.startsWith('@'))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  const sentence = (/^(.*?[.!?])(?:\s|$)/.exec(words)?.[1] ?? words).replace(/[.!?]$/, '');
  const escaped = def.name.replace(/[$]/g, '\\$');
  const plain = sentence.replace(new RegExp(`(?<![\\p{L}\\p{N}_$])${escaped}(?![\\p{L}\\p{N}_$])`, 'gu'), '').replace(/\s+/g, ' ').trim();
  if (plain.split(' ').filter((w) => /[\p{L}]/u.test(w)).length < 3) return undefined;
  return plain.charAt(0).toLowerCase() + plain.slice(1);
}

void main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
