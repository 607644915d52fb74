import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ALL_VERBS, VERB_GROUPS } from '../../src/domain/endpoint/verbs.ts';

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8');

/** The body of the section under `heading`, up to the next heading of the same or a higher level. */
function section(doc: string, heading: string): string {
  const start = doc.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no section ${heading}`);
  const level = heading.split(' ')[0]!;
  const rest = doc.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^#{1,${level.length}} `, 'm'));
  return end < 0 ? rest : rest.slice(0, end);
}

/** The first table after the paragraph that starts with `marker`. */
function tableAfter(doc: string, marker: string): string {
  const start = doc.indexOf(`\n${marker}`);
  if (start < 0) throw new Error(`no paragraph ${marker}`);
  const lines = doc.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const after = lines.slice(first);
  const end = after.findIndex((l) => !l.startsWith('|'));
  return after.slice(0, end < 0 ? undefined : end).join('\n');
}

/** Table rows `| first | second | …` of a section, header and rule rows left out. */
function rows(text: string): string[][] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|[-| ]+\|$/.test(l))
    .slice(1)
    .map((l) =>
      l
        .slice(1, -1)
        .split(' | ')
        .map((c) => c.trim()),
    );
}

const verbsIn = (cell: string): string[] => [...cell.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);

describe('verb tables against the verb catalog (src/domain/endpoint/verbs.ts)', () => {
  it("the MCP reference's verbs table lists each group with exactly its verbs, in catalog order", () => {
    const table = rows(section(read('docs/reference/mcp-tools.md'), '## Verbs'));
    const byGroup = Object.fromEntries(
      table.map(([group, verbs]) => [group!.split(' ')[0]!, verbsIn(verbs!)]),
    );
    expect(byGroup).toEqual(Object.fromEntries(Object.entries(VERB_GROUPS).map(([g, v]) => [g, [...v]])));
    expect(table.flatMap(([, verbs]) => verbsIn(verbs!))).toEqual([...ALL_VERBS]);
  });

  it('the tool tables of the MCP reference and the rules guide describe every verb once, and only those', () => {
    const tools = rows(tableAfter(section(read('docs/reference/mcp-tools.md'), '## Tools'), '| tool |'));
    const rules = rows(tableAfter(read('docs/guides/writing-rules.md'), '**Verbs (MCP), owner only**'));
    const documented = [...tools, ...rules].flatMap(([first]) => verbsIn(first!));
    expect([...documented].sort()).toEqual([...ALL_VERBS].sort());
  });
});
