import type { FileTags } from '../map/tags';
import type { WeightedEdge } from './pagerank';

/** A file as the reference graph sees it. */
export interface GraphFile {
  /** Path relative to the repository root (`/`-separated). */
  path: string;
  /** Its tags; absent for files without a grammar (they are nodes with no edges). */
  tags?: FileTags;
}

/** Options for `buildReferenceGraph`. */
export interface ReferenceGraphOptions {
  /** Paths of files the user has open or edited recently: their references weigh 50× (aider's chat files). */
  recent?: ReadonlySet<string>;
}

/**
 * The definition → reference graph over files, weighted as aider's repository map weighs it
 * (aider `repomap.py`, `get_ranked_tags`): for every name both defined and referenced, an edge
 * from each file that references it to each file that defines it, of weight
 * `mul · √(references in the referencing file)`, where `mul` starts at 1 and is ×10 for a
 * snake_case, kebab-case or camelCase name of ≥ 8 characters, ×0.1 for a name starting with
 * `_`, ×0.1 for a name defined in more than 5 files, and ×50 when the referencing file is
 * recent. Unlike aider, no name gets ×10 for being mentioned in the question (the ranking
 * decides the question-independent prefix), and there are no self-edges: aider adds a 0.1
 * self-edge for a name nobody references and keeps a file's references to its own names, which
 * suits its ranking of definitions, but in a ranking of files a self-loop makes a file a rank
 * sink (a leaf file whose only out-edge is its self-loop kept the most rank of a six-file
 * fixture, above the file every other file uses). Returns edges over the indices of `files`, in
 * a deterministic order (names in code-unit order, then referencing file, then defining file).
 */
export function buildReferenceGraph(files: readonly GraphFile[], options: ReferenceGraphOptions = {}): WeightedEdge[] {
  const steps = referenceGraphSteps(files, options);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/** Files or names handled between two pauses of `referenceGraphSteps`. */
const GRAPH_STEP = 512;

/**
 * `buildReferenceGraph` in steps: the generator pauses (yields) after every `GRAPH_STEP` files or
 * names and returns the edges, so that a caller can turn the event loop between steps
 * (`rankFilesPaced`). The same edges, in the same order, as `buildReferenceGraph`.
 */
export function* referenceGraphSteps(files: readonly GraphFile[], options: ReferenceGraphOptions = {}): Generator<void, WeightedEdge[]> {
  const definers = new Map<string, number[]>();
  for (let i = 0; i < files.length; i++) {
    if (i % GRAPH_STEP === GRAPH_STEP - 1) yield;
    const tags = files[i]!.tags;
    if (tags === undefined) continue;
    const names = new Set(tags.definitions.map((d) => d.name));
    for (const name of names) push(definers, name, i);
  }
  // only names some file defines: most names used (locals, parameters, the language's own) are
  // defined nowhere, and listing their users was most of the time at 20,000 files
  const referencers = new Map<string, Array<[number, number]>>();
  for (let i = 0; i < files.length; i++) {
    if (i % GRAPH_STEP === GRAPH_STEP - 1) yield;
    const tags = files[i]!.tags;
    if (tags === undefined) continue;
    for (const [name, count] of tags.references) if (definers.has(name)) push(referencers, name, [i, count]);
  }
  const edges: WeightedEdge[] = [];
  let handled = 0;
  for (const name of [...definers.keys()].sort()) {
    if (++handled % GRAPH_STEP === 0) yield;
    const defining = definers.get(name)!;
    const referencing = referencers.get(name);
    if (referencing === undefined) continue;
    let mul = 1;
    if (isCompoundIdentifier(name) && name.length >= 8) mul *= 10;
    if (name.startsWith('_')) mul *= 0.1;
    if (defining.length > 5) mul *= 0.1;
    for (const [r, count] of referencing) {
      const weight = (options.recent?.has(files[r]!.path) ? mul * 50 : mul) * Math.sqrt(count);
      for (const d of defining) if (d !== r) edges.push({ from: r, to: d, weight });
    }
  }
  return edges;
}

/** snake_case, kebab-case or camelCase (aider's test: a `_` or `-` with a letter, or both cases). */
function isCompoundIdentifier(name: string): boolean {
  const hasLetter = /\p{L}/u.test(name);
  const snake = name.includes('_') && hasLetter;
  const kebab = name.includes('-') && hasLetter;
  const camel = /\p{Lu}/u.test(name) && /\p{Ll}/u.test(name);
  return snake || kebab || camel;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}
