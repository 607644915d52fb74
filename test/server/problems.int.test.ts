import { request as httpRequest } from 'node:http';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { embeddedTarget } from '../support/embedded.ts';
import { signedDelivery } from './harness.ts';

/**
 * Every answer that is an error is an RFC 9457 problem document (issue 2, point 8), including
 * those Fastify would otherwise write itself: an unknown route, a malformed URL, a request Node's
 * parser refuses, a request that arrives during shutdown. Driven over real sockets, because
 * some of these never reach `app.inject()`'s path (a raw percent-escape, bytes that are not HTTP).
 */

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const TOKEN = 's3cr3t-ingest-token';
const json = { 'content-type': 'application/json' };
const INTERNALS = 'connect ECONNREFUSED db.internal:5432 password=hunter2';

async function start(): Promise<{ app: FastifyInstance; runtime: Runtime; port: number }> {
  const target = await embeddedTarget();
  const config = loadConfig({
    ...target.env,
    HOOKLINE_HOST: '127.0.0.1',
    HOOKLINE_PORT: '0',
    HOOKLINE_LOG_LEVEL: 'silent',
    HOOKLINE_CODEHOST_SECRET: 'e2e-codehost-secret',
  });
  const logger = createLogger({
    logLevel: (process.env.HOOKLINE_TEST_LOG as 'debug' | undefined) ?? 'silent',
  });
  const runtime = await createRuntime(config, { ...target.runtimeOptions, logger });
  runtime.onClose(() => target.drop());
  const app = await buildApp(runtime, { requestLogging: false });
  // A route whose handler fails the way a broken dependency does: its message and stack must stay
  // in the log and out of the answer.
  app.get('/test/fail', async () => {
    throw new Error(INTERNALS);
  });
  app.get('/test/fail-with-status', async () => {
    throw Object.assign(new Error(INTERNALS), { statusCode: 502 });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  return { app, runtime, port: typeof address === 'object' && address ? address.port : 0 };
}

/** One request with the path sent byte for byte (no client-side URL normalisation). */
function raw(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawResponse> {
  const framing = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const options = {
      host: '127.0.0.1',
      port,
      method,
      path,
      headers: { ...headers, ...framing },
      agent: false,
    };
    const req = httpRequest(options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function expectProblem(res: RawResponse, status: number, code: string): Record<string, unknown> {
  expect(res.status, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const problem = JSON.parse(res.body) as Record<string, unknown>;
  expect(problem).toMatchObject({ status, code, type: `urn:hookline:problem:${code.replace(/_/g, '-')}` });
  expect(typeof problem.title).toBe('string');
  return problem;
}

describe('problem documents for every error', () => {
  let server: Awaited<ReturnType<typeof start>>;

  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    await server.app.close();
    await server.runtime.close();
  });

  it('answers an unknown route with a 404 problem', async () => {
    const problem = expectProblem(await raw(server.port, 'GET', '/no/such/route?x=1'), 404, 'not_found');
    expect(problem).toMatchObject({ detail: 'no route for GET /no/such/route', instance: '/no/such/route' });
  });

  it('never echoes a token from an unknown path that carries one', async () => {
    for (const method of ['GET', 'POST']) {
      const path = `/webhooks/generic/orders/${TOKEN}/extra`;
      const res =
        method === 'GET'
          ? await raw(server.port, method, path)
          : await raw(server.port, method, path, json, '{}');
      const problem = expectProblem(res, 404, 'not_found');
      expect(res.body).not.toContain(TOKEN);
      expect(problem.instance).toBe('/webhooks/generic/orders/«redacted»/extra');
      expect(problem.detail).toBe(`no route for ${method} /webhooks/generic/orders/«redacted»/extra`);
    }
  });

  it('answers a malformed percent-escape with a 400 problem, token redacted', async () => {
    const paths = [
      '/webhooks/generic/%E0%A4%A',
      `/webhooks/generic/orders/${TOKEN}%E0%A4%A`,
      `/webhooks/w/${TOKEN}%E0%A4%A`,
    ];
    for (const path of paths) {
      for (const method of ['GET', 'POST']) {
        const res =
          method === 'GET'
            ? await raw(server.port, method, path)
            : await raw(server.port, method, path, json, '{}');
        // Fastify finds the route, then fails to decode the parameter, whatever the method.
        const problem = expectProblem(res, 400, 'bad_request');
        expect(problem.detail).toMatch(/malformed/);
        expect(res.body, `${method} ${path}`).not.toContain(TOKEN);
        expect(res.body).not.toContain('FST_ERR');
      }
    }
  });

  it('answers a body of a type the route does not parse with a 415 problem', async () => {
    // Same-origin, so the form-post policy (checked before the body is read) lets it reach the parser.
    const res = await raw(
      server.port,
      'POST',
      '/settings',
      { 'content-type': 'text/xml', 'sec-fetch-site': 'same-origin' },
      '<a/>',
    );
    expectProblem(res, 415, 'unsupported_media_type');
  });

  it('answers bytes that are not HTTP with a 400 problem', async () => {
    const socket = net.connect({ host: '127.0.0.1', port: server.port });
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    await new Promise<void>((resolve) => {
      socket.once('connect', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      socket.once('close', () => resolve());
    });
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toMatch(/\r\ncontent-type: application\/problem\+json/i);
    const problem = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    expect(problem).toMatchObject({ status: 400, code: 'bad_request' });
  });

  it('hides the internals of a 5xx: neither the thrown message nor a stack', async () => {
    for (const path of ['/test/fail', '/test/fail-with-status']) {
      const res = await raw(server.port, 'GET', path);
      const problem = expectProblem(res, 500, 'internal');
      expect(problem.detail).toBe('Internal server error');
      expect(res.body).not.toContain('hunter2');
      expect(res.body).not.toContain('db.internal');
      expect(res.body).not.toMatch(/\bat .*:\d+:\d+/); // a stack frame
      expect(Object.keys(problem).sort()).toEqual(['code', 'detail', 'instance', 'status', 'title', 'type']);
    }
  });
});

describe('a request during shutdown', () => {
  it('gets a 503 problem with Connection: close while the one in flight completes', async () => {
    const server = await start();
    const delivery = await signedDelivery(JSON.stringify({ note: 'in flight while closing' }));
    const body = Buffer.from(delivery.body);

    // One kept-alive connection: the first request is taken on (100 Continue) but its body is
    // held back, so close() has to wait for it.
    const socket = net.connect({ host: '127.0.0.1', port: server.port });
    let text = '';
    const waiters: Array<() => void> = [];
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      for (const w of waiters.splice(0)) w();
    });
    socket.on('close', () => {
      for (const w of waiters.splice(0)) w();
    });
    const until = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        if (socket.destroyed) throw new Error(`socket closed; received:\n${text}`);
        await new Promise<void>((r) => waiters.push(r));
      }
    };
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    const head = (method: string, path: string, headers: Record<string, string>) =>
      [
        `${method} ${path} HTTP/1.1`,
        `Host: 127.0.0.1:${server.port}`,
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
        '',
        '',
      ].join('\r\n');
    socket.write(
      head('POST', '/webhooks/codehost', {
        ...delivery.headers,
        'Content-Length': String(body.length),
        Expect: '100-continue',
      }),
    );
    await until(/^HTTP\/1\.1 100 Continue\r\n\r\n/);

    const closed = server.app.close();
    // close() has begun once new connections are refused.
    for (;;) {
      const refused = await new Promise<boolean>((resolve) => {
        const probe = net.connect({ host: '127.0.0.1', port: server.port });
        probe.once('connect', () => {
          probe.destroy();
          resolve(false);
        });
        probe.once('error', () => resolve(true));
      });
      if (refused) break;
      await new Promise((r) => setTimeout(r, 25));
    }

    // The rest of the first body, and a second request pipelined behind it on the same connection.
    socket.write(Buffer.concat([body, Buffer.from(head('GET', '/healthz', {}))]));
    await until(/HTTP\/1\.1 503 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
    socket.destroy();
    await closed;
    await server.runtime.close();

    const responses = text.split(/(?=HTTP\/1\.1 )/).slice(1); // after the 100 Continue
    expect(responses[0]).toMatch(/^HTTP\/1\.1 202 /);
    const refusal = responses[1] ?? '';
    expect(refusal).toMatch(/^HTTP\/1\.1 503 /);
    expect(refusal).toMatch(/\r\ncontent-type: application\/problem\+json/i);
    expect(refusal).toMatch(/\r\nconnection: close\r\n/i);
    const problem = JSON.parse(refusal.slice(refusal.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    expect(problem).toMatchObject({ status: 503, code: 'unavailable', instance: '/healthz' });
  });
});
