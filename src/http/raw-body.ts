import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HooklineError } from '../errors.ts';

/**
 * Makes every body of `scope` arrive as the raw bytes, whatever its content type: receivers verify
 * and store exactly what was sent, so no parser of theirs ever decodes it. Over `limit` bytes the
 * read stops with a 413.
 */
export function useRawBodies(scope: FastifyInstance, limit: number): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', async (_request: FastifyRequest, payload: NodeJS.ReadableStream) => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of payload as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw new HooklineError('payload_too_large', `the body exceeds ${limit} bytes`);
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  });
}
