import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HooklineError } from '../errors.ts';

/**
 * Makes every body of `scope` arrive as the raw bytes, whatever its content type: receivers verify
 * and store exactly what was sent, so no parser of theirs ever decodes it. Over `limit` bytes the
 * read stops with a 413. Read with listeners rather than `for await`: the async iterator cost
 * about 10 µs of CPU a request (bench/README.md, "The Node process's CPU per delivery").
 */
export function useRawBodies(scope: FastifyInstance, limit: number): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(
    '*',
    (
      _request: FastifyRequest,
      payload: NodeJS.ReadableStream,
      done: (err: Error | null, body?: Buffer) => void,
    ) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const settle = (err: Error | null, body?: Buffer) => {
        if (settled) return;
        settled = true;
        payload.removeListener('data', onData);
        done(err, body);
      };
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit) {
          // Stop keeping it (the rest flows past unread) and answer, as Fastify's own parser does.
          settle(new HooklineError('payload_too_large', `the body exceeds ${limit} bytes`));
          return;
        }
        chunks.push(chunk);
      };
      payload.on('data', onData);
      payload.once('end', () => settle(null, Buffer.concat(chunks, size)));
      payload.on('error', (err: Error) => settle(err));
    },
  );
}
