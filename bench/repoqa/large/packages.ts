/**
 * The repositories of bench/repoqa/large (issue 15): real npm packages whose sources are several
 * times larger than the benchmark's context, pinned like bench/repoqa's (exact version and the
 * tarball's sha512 integrity as the npm registry publishes it, `npm view <name>@<version>
 * dist.integrity`) and fetched the same way (`setupPackage`: `npm pack`, integrity checked,
 * extracted into bench/.repoqa/repos).
 *
 * `include` keeps each package's own JavaScript sources (tests, docs, type declarations,
 * examples and bundled builds left out). Sizes in Qwen2.5-Coder-1.5B tokens of the product's
 * file sections (`packRepository` without a budget) are in `bench/results/repoqa-large-coder.json`
 * (`repos[].sourceTokens`), measured by the run.
 */
import type { RepoPackage } from '../packages';

/** The large repositories, in run order. */
export const LARGE_PACKAGES: readonly RepoPackage[] = [
  { name: 'axios', version: '1.21.1', integrity: 'sha512-6eI5Q/Y4u/Um9dDlsRoq5pY2rxnUTv+L4PpLitnbk/i4jb3MxLZ5CsN5Ih3IysbeRYK4pR+P7qfMsOQl9fwwFQ==', include: ['/index.js', '/lib/'] },
  { name: 'fastify', version: '5.12.8', integrity: 'sha512-moP8exb2sCHLUbJkwp+I6C0padhy4D8lp0SdmzY7HhSdZuqm7O/u3o2aq7u8okaQ//33QDzj3G/u+FsSdB8Qzw==', include: ['/fastify.js', '/lib/'] },
  { name: 'pino', version: '10.4.0', integrity: 'sha512-bk1ZMTwG/Vymx+zPoa28MhNzucFvXJWp3csrSuxuHPSMeUettaCoQ5Jvg07mtC4JGNpcfTwz41oVCnNgBK9+vA==', include: ['/pino.js', '/file.js', '/lib/'] },
  { name: 'express', version: '5.3.0', integrity: 'sha512-qCqy1xSoaugxOD4IVHb1ZWdkvCF2W3aE2okKouWj8VwJ+ztskSiXoBnCSJqfKT+cVPJhuJqe9YLbY425+Zh00g==', include: ['/index.js', '/lib/'] },
];

/** The large package with this name (or `name@version`). @throws Error naming the known ones. */
export function findLargePackage(id: string): RepoPackage {
  const p = LARGE_PACKAGES.find((q) => q.name === id || `${q.name}@${q.version}` === id);
  if (!p) throw new Error(`unknown repoqa-large package ${id}: one of ${LARGE_PACKAGES.map((q) => `${q.name}@${q.version}`).join(', ')}`);
  return p;
}
