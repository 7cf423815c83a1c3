// A real HTTP receiver for webhook tests: listens on 127.0.0.1:0, records every request, and answers with
// whatever the test scripts (a status per call, optional headers, an optional delay).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Webhook ids (event ids) received, in order, duplicates included. */
  ids(): string[];
  /** What to answer to the n-th request (0-based); default 204. */
  respond: (n: number, req: Received) => Reply;
  close(): Promise<void>;
}

export async function startReceiver(respond: (n: number, req: Received) => Reply = () => ({ status: 204 })): Promise<Receiver> {
  const received: Received[] = [];
  let server: Server;
  const receiver: Receiver = {
    url: '',
    port: 0,
    received,
    ids: () => received.map((r) => String(r.headers['webhook-id'])),
    respond,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      const n = received.length;
      received.push(r);
      const reply = receiver.respond(n, r);
      const send = () => {
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  return receiver;
}

export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
