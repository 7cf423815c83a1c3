// The ceiling: a bare Fastify hello-world on the same machine, same Node, same load generator. Every API
// scenario is reported as a ratio to what this does, which is the figure that survives a busy, shared machine.
// Usage: node bench/hello.js (after tsc) or tsx bench/hello.ts; listens on PORT (0 = any) on 127.0.0.1 and
// prints "listening on <url>".
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));

const port = Number(process.env.PORT ?? 0);
await app.listen({ port, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}\n`);
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
