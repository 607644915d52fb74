import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * At shutdown, closes every connection with no request in flight, and each other one as soon as
 * its last response is done. Fastify's `forceCloseConnections: 'idle'` (Node's
 * closeIdleConnections) leaves open a connection that has not sent a request yet: Node times it
 * by headersTimeout (60 s), so close() waited that long for a browser's preconnected socket, or a
 * pooled client's spare one. Requests are counted per connection from the server's own `request`
 * event (pipelined ones included) to their response's `close`.
 */
export const connectionsPlugin = fp(
  async (app: FastifyInstance) => {
    const inFlight = new Map<Socket, number>();
    let closing = false;

    app.server.on('connection', (socket: Socket) => {
      if (closing) {
        socket.destroy();
        return;
      }
      inFlight.set(socket, 0);
      socket.once('close', () => inFlight.delete(socket));
    });

    app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const socket = request.socket;
      const count = inFlight.get(socket);
      if (count === undefined) return;
      inFlight.set(socket, count + 1);
      response.once('close', () => {
        const left = inFlight.get(socket);
        if (left === undefined) return;
        inFlight.set(socket, left - 1);
        if (closing && left === 1) socket.destroy();
      });
    });

    app.addHook('preClose', async () => {
      closing = true;
      for (const [socket, count] of inFlight) if (count === 0) socket.destroy();
    });
  },
  { name: 'hookline-connections' },
);
