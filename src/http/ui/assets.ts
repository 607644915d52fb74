import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

export interface Asset {
  readonly type: string;
  /** Short content hash: part of the URL, so a changed file is a new URL. */
  readonly version: string;
}

export type Assets = ReadonlyMap<string, Asset>;

const ownDir = fileURLToPath(new URL('./static/', import.meta.url));

const sources: Record<string, { path: string; type: string }> = {
  'app.css': { path: `${ownDir}app.css`, type: 'text/css; charset=utf-8' },
  'app.js': { path: `${ownDir}app.js`, type: 'text/javascript; charset=utf-8' },
  'icon.svg': { path: `${ownDir}icon.svg`, type: 'image/svg+xml' },
  // htmx is served from the npm package by the app itself: no CDN, the UI works offline.
  'htmx.min.js': {
    path: createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
};

/** Hashes every static file once at start: the version in the URLs the templates link to. */
export function loadAssets(): Assets {
  const assets = new Map<string, Asset>();
  for (const [name, { path, type }] of Object.entries(sources)) {
    const body = readFileSync(path);
    const hash = createHash('sha256').update(body).digest('base64url');
    assets.set(name, { type, version: hash.slice(0, 10) });
  }
  return assets;
}

/** `/static/app.css?v=<hash>`: the URL the templates link to. */
export const assetUrl = (assets: Assets, name: string): string => {
  const asset = assets.get(name);
  if (!asset) throw new Error(`no static asset named ${name}`);
  return `/static/${name}?v=${asset.version}`;
};

/**
 * GET /static/<name>, served by @fastify/static from this folder and htmx's own package folder,
 * and only the files named above. A request carrying the current version is cached for a year
 * (immutable): the templates always link the versioned URL. Anything else is cached briefly and
 * revalidated with the ETag.
 */
export async function registerAssetRoutes(app: FastifyInstance, assets: Assets): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook('onSend', async (request, reply, payload) => {
      if (reply.statusCode !== 200 && reply.statusCode !== 304) return payload;
      const name = request.url.slice('/static/'.length).split('?')[0] ?? '';
      const version = (request.query as { v?: string }).v;
      const asset = assets.get(name);
      // The registered type (text/javascript, RFC 9239), not the mime table's older name.
      if (asset && reply.statusCode === 200) reply.header('content-type', asset.type);
      reply.header(
        'cache-control',
        version !== undefined && version === asset?.version
          ? 'public, max-age=31536000, immutable'
          : 'public, max-age=300',
      );
      return payload;
    });
    await scope.register(fastifyStatic, {
      root: [...new Set(Object.values(sources).map((s) => dirname(s.path)))],
      prefix: '/static/',
      // Only the files named above; each exists in one of the two folders.
      allowedPath: (pathName) => Object.hasOwn(sources, pathName.slice(1)),
      cacheControl: false,
      lastModified: false,
      index: false,
      list: false,
      dotfiles: 'deny',
    });
  });
}
