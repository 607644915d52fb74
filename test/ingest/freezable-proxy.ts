import net from 'node:net';

/**
 * A TCP proxy in front of a real server that can be frozen: the peer then behaves like a database
 * that hangs instead of refusing. Connections are still accepted (the kernel does that), but what
 * is held never arrives until `thaw()`. A side that closes drops what was held for the other.
 */
export interface FreezableProxy {
  readonly port: number;
  /**
   * `all`: nothing passes either way (a hung host). `responses`: the server gets every request and
   * runs it, but its answers are held (a commit whose acknowledgement never comes).
   */
  freeze(mode?: 'all' | 'responses'): void;
  thaw(): void;
  close(): Promise<void>;
}

type Mode = 'open' | 'all' | 'responses';

export async function startFreezableProxy(target: { host: string; port: number }): Promise<FreezableProxy> {
  let mode: Mode = 'open';
  const flushes = new Set<() => void>();
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    /** One direction, in order: once a chunk is held, every later one waits behind it. */
    const direction = (from: net.Socket, to: net.Socket, heldIn: (m: Mode) => boolean) => {
      const held: Buffer[] = [];
      from.on('data', (chunk: Buffer) => {
        if (heldIn(mode) || held.length > 0) held.push(chunk);
        else to.write(chunk);
      });
      return () => {
        if (heldIn(mode)) return;
        for (const chunk of held.splice(0)) to.write(chunk);
      };
    };
    const requests = direction(client, upstream, (m) => m === 'all');
    const responses = direction(upstream, client, (m) => m !== 'open');
    const flush = () => {
      requests();
      responses();
    };
    flushes.add(flush);
    const end = () => {
      flushes.delete(flush);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    port: (server.address() as net.AddressInfo).port,
    freeze: (m = 'all') => {
      mode = m;
    },
    thaw: () => {
      mode = 'open';
      for (const flush of flushes) flush();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
