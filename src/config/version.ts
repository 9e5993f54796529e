// The package's version, for --version and the build-info metric. Read from package.json at run
// time rather than copied into the code, so a release bump cannot leave the two disagreeing; the
// image copies package.json next to dist/ for the same reason.
import { readFileSync } from 'node:fs';

function readVersion(): string {
  try {
    // dist/src/config/version.js -> the package root, in the repo and in the image alike.
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export const VERSION = readVersion();

/** One line for --version: the package's version and the Node that runs it (support asks for both). */
export function versionText(command: string): string {
  return `${command} ${VERSION} (node ${process.version})`;
}
