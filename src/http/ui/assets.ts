import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

export interface Asset {
  readonly body: Buffer;
  readonly type: string;
  /** Short content hash: part of the URL, so a changed file is a new URL. */
  readonly version: string;
  readonly etag: string;
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

/** Reads every static file once at start; they are served from memory. */
export function loadAssets(): Assets {
  const assets = new Map<string, Asset>();
  for (const [name, { path, type }] of Object.entries(sources)) {
    const body = readFileSync(path);
    const hash = createHash('sha256').update(body).digest('base64url');
    assets.set(name, { body, type, version: hash.slice(0, 10), etag: `"${hash.slice(0, 22)}"` });
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
 * GET /static/<name>. A request carrying the current version is cached for a year (immutable):
 * the templates always link the versioned URL. Anything else is cached briefly and revalidated.
 */
export function registerAssetRoutes(app: FastifyInstance, assets: Assets): void {
  app.get<{ Params: { name: string }; Querystring: { v?: string } }>(
    '/static/:name',
    async (request, reply) => {
      const asset = assets.get(request.params.name);
      if (!asset) return reply.callNotFound();
      reply
        .header('content-type', asset.type)
        .header('etag', asset.etag)
        .header(
          'cache-control',
          request.query.v === asset.version ? 'public, max-age=31536000, immutable' : 'public, max-age=300',
        );
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      return reply.send(asset.body);
    },
  );
}
