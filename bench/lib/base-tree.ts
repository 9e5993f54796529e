// A given commit built side by side with the tree under test, so a benchmark can report before and
// after in the same run (the same machine load hits both): `git worktree add --detach` into a
// temporary folder, node_modules linked from this tree (or installed, when the base's lockfile differs),
// `tsc`, and removed again afterwards.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './scenario.js';

export interface BaseTree {
  /** The built checkout (dist/src/cli.js inside). */
  readonly dir: string;
  /** Short commit id and subject line, for the report. */
  readonly commit: string;
  readonly subject: string;
  /** Removes the worktree (a no-op for a tree given ready-built). */
  readonly remove: () => void;
}

function git(args: readonly string[], cwd = ROOT): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Builds `rev` (anything `git rev-parse` takes) into a temporary worktree. */
export function buildCommit(rev: string, log: (l: string) => void): BaseTree {
  const commit = git(['rev-parse', '--short', `${rev}^{commit}`]);
  const subject = git(['log', '-1', '--format=%s', commit]);
  const dir = mkdtempSync(join(tmpdir(), `streamstats-base-${commit}-`));
  // The folder must not exist for `git worktree add`; mkdtemp only reserved the name.
  rmSync(dir, { recursive: true, force: true });
  const remove = (): void => {
    try {
      git(['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      try {
        git(['worktree', 'prune']);
      } catch {
        // Nothing registered: nothing to prune.
      }
    }
  };
  try {
    git(['worktree', 'add', '--detach', dir, commit]);
    // This tree's node_modules serve a base whose lockfile is the same; another lockfile (a dependency
    // added or dropped since) gets its own install, or the base would load modules it never had.
    if (readFileSync(join(dir, 'package-lock.json'), 'utf8') === readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) {
      symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'));
    } else {
      log(`  base commit ${commit}: its lockfile differs from this tree's; npm ci in ${dir}`);
      execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    }
    log(`  base commit ${commit} (${subject.slice(0, 70)}): building in ${dir}`);
    execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    if (!existsSync(join(dir, 'dist/src/cli.js'))) throw new Error(`base commit ${commit}: no dist/src/cli.js after tsc`);
  } catch (err) {
    remove();
    throw err;
  }
  return { dir, commit, subject, remove };
}

/** A checkout someone built already (BASE_TREE=/path): used as is, never removed. */
export function givenTree(dir: string): BaseTree {
  let commit = 'unknown';
  let subject = '';
  try {
    commit = git(['rev-parse', '--short', 'HEAD'], dir);
    subject = git(['log', '-1', '--format=%s'], dir);
  } catch {
    // Not a git checkout: name it by its path only.
  }
  if (!existsSync(join(dir, 'dist/src/cli.js'))) throw new Error(`BASE_TREE=${dir}: no dist/src/cli.js (build it first)`);
  return { dir, commit, subject, remove: () => undefined };
}
