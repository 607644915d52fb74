import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Every relative link of the README and of docs/ leads somewhere: the file exists and, when the
 * link names an anchor in a markdown file, that file has a heading of that anchor (GitHub's slugs).
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

const docs = [
  'README.md',
  ...readdirSync(path.join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f.split(path.sep).join('/')}`),
].sort();

/** The text without fenced code blocks and inline code, where brackets and `#` lines are not markdown. */
const prose = (text: string): string =>
  text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const anchorCache = new Map<string, Set<string>>();
const anchorsOfFile = (file: string): Set<string> => {
  let anchors = anchorCache.get(file);
  if (!anchors) {
    anchors = anchorsOf(readFileSync(file, 'utf8'));
    anchorCache.set(file, anchors);
  }
  return anchors;
};

/** The broken relative links of one document, as `doc: target (why)`. */
function brokenLinks(doc: string): string[] {
  const broken: string[] = [];
  const file = path.join(root, doc);
  for (const m of prose(readFileSync(file, 'utf8')).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
    const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
    const resolved = pathPart === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(pathPart));
    if (!existsSync(resolved)) {
      broken.push(`${doc}: ${target} (no such file)`);
      continue;
    }
    if (anchor && statSync(resolved).isFile() && resolved.endsWith('.md')) {
      if (!anchorsOfFile(resolved).has(decodeURIComponent(anchor).toLowerCase())) {
        broken.push(`${doc}: ${target} (no heading for #${anchor})`);
      }
    }
  }
  return broken;
}

describe('links in the README and docs/', () => {
  it('finds the documents', () => {
    expect(docs).toEqual(
      expect.arrayContaining(['README.md', 'docs/architecture.md', 'docs/reference/api.md']),
    );
  });

  it('computes anchors as GitHub does', () => {
    expect([
      ...anchorsOf(
        '# A b\n## Endpoint webhooks: `POST /webhooks/w/<token>`\n```\n# not a heading\n```\n## A b\n',
      ),
    ]).toEqual(['a-b', 'endpoint-webhooks-post-webhookswtoken', 'a-b-1']);
  });

  it('every relative link resolves to a file, and its anchor to a heading there', () => {
    expect(docs.flatMap(brokenLinks)).toEqual([]);
  });
});
