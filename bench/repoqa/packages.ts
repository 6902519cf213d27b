/**
 * The repositories of the code-QA benchmark (issue 13, part 3): real npm packages with readable
 * JavaScript sources, pinned by exact version and by the tarball's sha512 integrity (the value
 * the npm registry publishes, `npm view <name>@<version> dist.integrity`), fetched with
 * `npm pack` into bench/.repoqa/ (ignored by git) and extracted there.
 *
 * Each package packs whole into the benchmark's context with the product's packer
 * (`packRepository`), restricted by `include` to the package's own source files (README, tests,
 * changelogs and bundled builds left out). Token counts were measured with each model's
 * tokenizer (SmolLM2 / Qwen2.5-Coder) on the product's file sections.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** One pinned package. */
export interface RepoPackage {
  /** npm name. */
  name: string;
  /** Exact version. */
  version: string;
  /** The tarball's Subresource Integrity string (`sha512-<base64>`), as the registry publishes it. */
  integrity: string;
  /** Include patterns (gitignore syntax, relative to the package root) passed to `packRepository`. */
  include: string[];
}

/**
 * The packages (1.2K–7.0K SmolLM2 tokens each, every one packing whole into an 8,192-token
 * context). Which model runs which is in run.ts (`MODELS`); `ms` is the CI test's repository.
 */
export const PACKAGES: readonly RepoPackage[] = [
  { name: 'http-errors', version: '2.0.1', integrity: 'sha512-4FbRdAX+bSdmo4AUFuS0WNiPz8NgFt+r8ThgNWmlrjQjt1Q7ZR9+zTlce2859x4KSXrwIsaeTqDoKQmtP8pLmQ==', include: ['/index.js'] },
  { name: 'kleur', version: '4.1.5', integrity: 'sha512-o+NO+8WrRiQEE4/7nwRJhN1HWpVmJm511pBHUxPLtp0BUISzlBplORYSmTclCnJvQq2tKu/sgl3xVpkc7ZWuQQ==', include: ['/index.js', '/colors.js'] },
  { name: 'ini', version: '7.0.0', integrity: 'sha512-ifK0CgjALofS5bkrcTy4RaQ9Vx2Knf/eLeIO+NaswQEpH1UblrtTSCIvN71qQDMq0PeQ/SSPojvEJp9vvvfr+w==', include: ['/lib/'] },
  { name: 'minimist', version: '1.2.8', integrity: 'sha512-2yyAR8qBkN3YuheJanUpWC5U3bb5osDywNB8RzDVlDwDHbocAJveqqj1u8+SVD7jkWT4yvsHCpWqqWqAxb0zCA==', include: ['/index.js'] },
  {
    name: 'semver',
    version: '7.8.6',
    integrity: 'sha512-9lpSSU4Mly3mrtruwLs1eLK6+gzbzqeBFwRNjIjE+9LuDpWdYctrQlQ3ej1Ilgi7gknpsTRnPoLP8DpCHqHIJw==',
    // the functions and the small internals; internal/re.js and the whitespace trimmer are
    // generated-looking regular-expression tables that would take half of the prompt
    include: ['/functions/', '/internal/', '!/internal/re.js', '!/internal/trim-comparator-whitespace.js'],
  },
  { name: 'body-parser', version: '2.4.0', integrity: 'sha512-Ifk1KcLrxaGt1occQagQNFNNOqRt1LFuehEnHHzB8Z6cRgIxRU1TBaiIsUiCdA+gy5PL7Y1IX31DNKkRmxtXjQ==', include: ['/index.js', '/lib/'] },
  { name: 'negotiator', version: '1.1.0', integrity: 'sha512-NMPBRMJgiQHjbd8phG3Vebdx4kZ1H121rbl5IkMqeOsahptB9BKo/d7oJ3zTXqTgagn2bWlNSXkh0QUGM31RYg==', include: ['/index.js', '/lib/'] },
  { name: 'debug', version: '4.4.3', integrity: 'sha512-RGwwWnwQvkVfavKVt22FGLw+xYSdzARwm0ru6DhTVA3umU5hZc28V3kO4stgYryrTlLpuvgI9GiijltAjNbcqA==', include: ['/src/'] },
  { name: 'cross-spawn', version: '7.0.6', integrity: 'sha512-uV2QOWP2nWzsy2aMp8aRibhi9dlzF5Hgh5SHaB9OiTGEyDTiJJyx0uy51QXdyWbtAHNua4XJzUKca3OzKUd3vA==', include: ['/index.js', '/lib/'] },
  { name: 'mime-types', version: '3.0.2', integrity: 'sha512-Lbgzdk0h4juoQ9fCKXW4by0UJqj+nOOrI9MJ1sSj4nI8aI2eo1qmvQEie4VD1glsS250n15LsWsYtCugiStS5A==', include: ['/index.js', '/mimeScore.js'] },
  { name: 'braces', version: '3.0.3', integrity: 'sha512-yQbXgO/OSZVD2IsiLlro+7Hf6Q18EJrKSEsdoMzKePKXct3gvD8oLcOQdIzGupr5Fj+EDe8gO/lxc1BzfMpxvA==', include: ['/index.js', '/lib/'] },
  { name: 'depd', version: '2.0.0', integrity: 'sha512-g7nH6P6dyDioJogAAGprGpCtVImJhpPk/roCzdb3fIh61/s/nPsfR6onyMwkCAR/OlC3yBC0lESvUoQEAssIrw==', include: ['/index.js'] },
  { name: 'send', version: '1.2.1', integrity: 'sha512-1gnZf7DFcoIcajTjTwjwuDjzuz4PPcY2StKPlsGAQ1+YH20IRVrBaXSWmdjowTJ6u8Rc01PoYOGHXfP1mYcZNQ==', include: ['/index.js'] },
  { name: 'morgan', version: '1.12.1', integrity: 'sha512-tljKC0ex20AjO58Ob/eZ53JloycbVswbVNCHx6V6VLGzqt/w8dIynVGL0G8qVjNKwiA7sYSogCrN6QtJ82IV+g==', include: ['/index.js'] },
  { name: 'proxy-addr', version: '2.0.8', integrity: 'sha512-5nnx0yGyVUcY6t9RnWcARWtwT9F1D8O9rt08htPvnd49W1IgZtmLkhu9WfMzQj1cFxjHIO6connUNVW5k7AVyQ==', include: ['/index.js'] },
  { name: 'compression', version: '1.8.2', integrity: 'sha512-o8vI5RE5A6EVVOd9o41jKp41aJom+QTEO/Bx8MYNjexMo/Bv2WOjUfZr+aL0WnYSgymUy6zeguqLTsIhV0gMvQ==', include: ['/index.js'] },
  { name: 'on-finished', version: '2.4.2', integrity: 'sha512-ATWUv387i+nLD49EiDoOft5scf32Vsdz3ktrQJG9bi7jRFmaXTssvyvj1EmeKVVgvesbqUtvQQvaS2TpTukAZQ==', include: ['/index.js'] },
  { name: 'finalhandler', version: '2.1.1', integrity: 'sha512-S8KoZgRZN+a5rNwqTxlZZePjT/4cnm0ROV70LedRHZ0p8u9fRID0hJUZQpkKLzro8LfmC8sx23bY6tVNxv8pQA==', include: ['/index.js'] },
  { name: 'ms', version: '2.1.3', integrity: 'sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==', include: ['/index.js'] },
];

/** `name@version`, the id of a package in results. */
export function packageId(p: Pick<RepoPackage, 'name' | 'version'>): string {
  return `${p.name}@${p.version}`;
}

/** The package with this name (or `name@version`). @throws Error naming the known packages. */
export function findPackage(id: string): RepoPackage {
  const p = PACKAGES.find((q) => q.name === id || packageId(q) === id);
  if (!p) throw new Error(`unknown repoqa package ${id}: one of ${PACKAGES.map(packageId).join(', ')}`);
  return p;
}

/** bench/.repoqa: tarballs, extracted packages, cached prefix states (ignored by git). */
export const WORK_DIR = path.resolve(__dirname, '..', '.repoqa');

/** The `sha512-<base64>` integrity of some bytes. */
export function integrityOf(bytes: Uint8Array): string {
  return `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
}

/**
 * Fetches a package with `npm pack <name>@<version>` (once; the tarball is kept), checks its
 * integrity against the pin, and extracts it (`tar`, the `package/` prefix stripped) into
 * `<dir>/repos/<name>-<version>`. Returns that folder. A second call makes no request.
 * @throws Error when npm fails or the tarball's integrity differs from the pin (the tarball is deleted).
 */
export function setupPackage(p: RepoPackage, dir = WORK_DIR): string {
  const tarballs = path.join(dir, 'tarballs');
  const repo = path.join(dir, 'repos', `${p.name}-${p.version}`);
  const tgz = path.join(tarballs, `${p.name}-${p.version}.tgz`);
  const marker = path.join(repo, '.repoqa-integrity');
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === p.integrity) return repo;
  fs.mkdirSync(tarballs, { recursive: true });
  if (!fs.existsSync(tgz)) {
    try {
      execFileSync('npm', ['pack', `${packageId(p)}`, '--pack-destination', tarballs, '--silent'], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (e) {
      throw new Error(`npm pack ${packageId(p)} failed: ${String((e as { stderr?: Buffer }).stderr ?? e).trim().split('\n').pop()}`);
    }
  }
  const got = integrityOf(fs.readFileSync(tgz));
  if (got !== p.integrity) {
    fs.rmSync(tgz, { force: true });
    throw new Error(`${tgz}: integrity ${got}, pinned ${p.integrity} (deleted; run again to fetch it anew)`);
  }
  fs.rmSync(repo, { recursive: true, force: true });
  fs.mkdirSync(repo, { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', repo, '--strip-components=1', '--no-same-owner']);
  // the marker sits outside every include pattern, so it is never packed
  fs.writeFileSync(marker, p.integrity);
  return repo;
}
