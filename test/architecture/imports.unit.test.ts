import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type IForbiddenRuleType, type IReporterOutput } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

/**
 * The import rules of docs/architecture.md, checked over the real import graph (type-only
 * imports included) with dependency-cruiser: a new import that runs the wrong way, or a cycle,
 * fails this test and names the file and the import.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

/** Application services, one folder per feature, on the one command handler. */
const FEATURES = 'commands|endpoints|todos|rules|webhooks|providers|settings|retention|friends|deliveries';
/** What serves people and agents: it may use features, never the other way round. */
const SURFACES = 'http|mcp|cli';
/** Everything under src/ but the domain. */
const OUTSIDE_DOMAIN = `(${FEATURES}|${SURFACES}|ingest|live|auth|replay|eventstore|db|metrics)`;

const rules: IForbiddenRuleType[] = [
  {
    name: 'domain-is-pure',
    comment: 'src/domain imports nothing outside the domain but zod: no I/O, no Node modules, no app code.',
    severity: 'error',
    from: { path: '^src/domain/' },
    to: { pathNot: ['^src/domain/', '(^|/)node_modules/zod/'] },
  },
  {
    name: 'no-cycles',
    comment: 'No module reaches itself again through its imports.',
    severity: 'error',
    from: { path: '^(src|projections|rules-sandbox)/' },
    to: { circular: true },
  },
  {
    name: 'features-below-surfaces',
    comment: 'Features (and the parts below them) never import HTTP, MCP or the CLI.',
    severity: 'error',
    // src/auth/plugin.ts is the OAuth server's HTTP routes: a surface itself, it shares the
    // form-post policy of src/http/same-origin.ts.
    from: {
      path: `^src/(${FEATURES}|ingest|live|auth|replay|eventstore|db|metrics)/`,
      pathNot: '^src/auth/plugin\\.ts$',
    },
    to: { path: `^src/(${SURFACES})/` },
  },
  {
    name: 'surfaces-reach-the-log-through-features',
    comment:
      'HTTP, MCP and the CLI read and write streams through features: of the event store only types, of the command handler nothing.',
    severity: 'error',
    // The error plugin maps the store's errors to problem documents; `hookline export`/`import`
    // move the whole log, which is the event store's own job (src/eventstore/transfer.ts).
    from: { path: `^src/(${SURFACES})/`, pathNot: '^src/http/errors-plugin\\.ts$' },
    to: {
      path: '^src/(eventstore|commands)/',
      pathNot: '^src/eventstore/transfer\\.ts$',
      dependencyTypesNot: ['type-only'],
    },
  },
  {
    name: 'only-entry-points-build-the-app',
    comment: 'app.ts and server.ts are the top: only the CLI and server.ts import them.',
    severity: 'error',
    from: { pathNot: ['^src/(server|app)\\.ts$', '^src/cli/'] },
    to: { path: '^src/(app|server)\\.ts$' },
  },
  {
    name: 'eventstore-knows-no-domain',
    comment: 'The event store port and its adapters are generic: no domain, feature or read model.',
    severity: 'error',
    from: { path: '^src/eventstore/' },
    to: { path: [`^src/(domain|${FEATURES}|${SURFACES}|ingest|live|auth|replay)/`, '^projections/'] },
  },
  {
    name: 'projections-below-features',
    comment: 'Read models are built from domain events; they never import features or surfaces.',
    severity: 'error',
    from: { path: '^projections/' },
    to: { path: `^src/(${FEATURES}|${SURFACES}|ingest|live|auth|replay)/` },
  },
  {
    name: 'features-read-queries-only',
    comment:
      'Features read read models through their query files (and row types), never a projection or the engine.',
    severity: 'error',
    from: { path: `^src/(${FEATURES}|ingest|live)/` },
    to: { path: '^projections/', pathNot: '\\.(queries|table)\\.ts$' },
  },
  {
    name: 'surfaces-read-queries-only',
    comment:
      'HTTP, MCP and the CLI read read models through query files; of the engine, only its types and checkpoints.',
    severity: 'error',
    from: { path: `^src/(${SURFACES})/` },
    to: {
      path: '^projections/',
      pathNot: ['\\.(queries|table)\\.ts$', '^projections/engine/(types|checkpoints)\\.ts$'],
    },
  },
  {
    name: 'database-type-from-tables',
    comment:
      'The one Database interface is composed from the *.table.ts files only (no cycle through projections).',
    severity: 'error',
    from: { path: '^src/db/' },
    to: { path: '^projections/', pathNot: '\\.table\\.ts$' },
  },
  {
    name: 'sandbox-below-features',
    comment: 'The rule sandbox runs rules; it may use the domain, never a feature or a surface.',
    severity: 'error',
    from: { path: '^rules-sandbox/' },
    to: { path: [`^src/${OUTSIDE_DOMAIN}/`, '^projections/'] },
  },
];

async function violations(): Promise<string[]> {
  const cwd = process.cwd();
  process.chdir(root);
  let result: IReporterOutput;
  try {
    result = await cruise(['src', 'projections', 'rules-sandbox'], {
      ruleSet: { forbidden: rules },
      validate: true,
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
      exclude: { path: ['^src/http/ui/static/'] },
      tsConfig: { fileName: 'tsconfig.json' },
    });
  } finally {
    process.chdir(cwd);
  }
  if (typeof result.output === 'string') throw new Error('dependency-cruiser gave no structured result');
  const summary = result.output.summary;
  return summary.violations.map(
    (v) =>
      `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (cycle: ${v.cycle.map((c) => c.name).join(' -> ')})` : ''}`,
  );
}

/** Files that may run SQL: the read models, the event store, the database layer and OAuth's own table. */
const SQL_ALLOWED =
  /^(projections\/|src\/eventstore\/|src\/db\/|src\/auth\/oauth-adapter\.ts$|src\/http\/health\.ts$)/;
/** Kysely's builders, its sql`` tag, and node-pg's raw `client.query(...)`. */
const SQL_CALL = /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\bsql`|\.query(<[^>]*>)?\(/;

/** The .ts files under `under` (paths from the repository root) whose text matches `pattern`. */
function filesMatching(under: string, pattern: RegExp, allowed?: RegExp): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(root, under), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (allowed?.test(file)) continue;
    if (pattern.test(readFileSync(path.join(root, file), 'utf8'))) found.push(file);
  }
  return found;
}

/** A stream read, appended or followed on the event store itself, not through a feature. */
const STORE_STREAM_CALL =
  /\bstore\??\.(readStream|readEvent|readAll|subscribeAll|append|appendAtomic|streamInfo|streamRevisions|truncateStream)\(/;

describe('import directions (docs/architecture.md)', () => {
  it('read-model SQL lives in the query files, not in the domain, the features, MCP or the screens', () => {
    expect(filesMatching('src', SQL_CALL, SQL_ALLOWED)).toEqual([]);
  });

  it('HTTP, MCP and the CLI read and write streams through features, never on the store itself', () => {
    const surfaces = SURFACES.split('|').flatMap((s) => filesMatching(`src/${s}`, STORE_STREAM_CALL));
    expect(surfaces).toEqual([]);
  });

  it('every import runs the way the layout says, with no cycle', { timeout: 60_000 }, async () => {
    expect(await violations()).toEqual([]);
  });
});
