import { readFileSync } from 'node:fs';

/**
 * The running version is the package version (spec 9: `hookline version`, /healthz `version`).
 * Read from package.json at the repository root, which ships with the program.
 */
export function packageVersion(): string {
  const raw = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  const version: unknown = JSON.parse(raw).version;
  if (typeof version !== 'string') throw new Error('package.json has no version');
  return version;
}
