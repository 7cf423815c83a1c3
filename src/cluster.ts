// `lmsapi serve --processes N`: Node's cluster. The primary applies migrations, makes sure a signing key exists
// (so the API processes never race to create one), then forks N API processes that share the listening port
// (the primary hands connections round-robin; it runs no HTTP itself). An API process that dies is replaced.
// SIGTERM/SIGINT are passed on: each API process closes with grace, then the primary exits.
// Where the webhook delivery worker runs is decided by the caller (see cli.ts `serve`): in the primary, unless
// --no-worker, so that `serve --processes 4` is 4 API processes plus one delivery worker.
import cluster, { type Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';

export interface ClusterOptions {
  processes: number;
  /** How long an API process may take to close before it is killed (its own shutdown bound plus a margin). */
  graceMs: number;
  /** Called once every API process listens. */
  onListening(address: { host: string; port: number }): void;
  /** Called after every API process has exited on shutdown (close the primary's own resources here). */
  onShutdown(): Promise<void>;
  log(message: string): void;
}

export function isClusterWorker(): boolean {
  return cluster.isWorker;
}

export function runClusterPrimary(options: ClusterOptions): void {
  let shuttingDown = false;
  let listening = 0;
  let announced = false;
  const restarts: number[] = [];

  const fork = (): Worker => {
    const worker = cluster.fork();
    worker.once('listening', (address: AddressInfo | { address: string; port: number }) => {
      listening++;
      if (!announced && listening >= options.processes) {
        announced = true;
        options.onListening({ host: address.address, port: address.port });
      }
    });
    return worker;
  };

  cluster.on('exit', (worker, code, signal) => {
    if (shuttingDown) return;
    // Replace a crashed API process, but stop if they keep crashing (more than 5 within a minute).
    const now = Date.now();
    restarts.push(now);
    while (restarts.length && restarts[0] < now - 60_000) restarts.shift();
    if (restarts.length > 5) {
      options.log(`API processes keep exiting (last: pid ${worker.process.pid}, code ${code}, signal ${signal}); giving up`);
      void shutdown(1);
      return;
    }
    options.log(`API process ${worker.process.pid} exited (code ${code}, signal ${signal}); starting another`);
    setTimeout(() => !shuttingDown && fork(), 500).unref();
  });

  const shutdown = async (exitCode: number) => {
    if (shuttingDown) return;
    shuttingDown = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => Boolean(w));
    const exited = workers.map((w) => new Promise((r) => (w.isDead() ? r(null) : w.once('exit', r))));
    for (const w of workers) w.process.kill('SIGTERM');
    const timer = setTimeout(() => {
      for (const w of workers) if (!w.isDead()) w.process.kill('SIGKILL');
    }, options.graceMs);
    await Promise.all(exited);
    clearTimeout(timer);
    await options.onShutdown().catch((err) => options.log(`error while shutting down: ${(err as Error).message}`));
    process.exit(exitCode);
  };
  let signals = 0;
  const onSignal = () => {
    if (++signals > 1) process.exit(1);
    void shutdown(0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  for (let i = 0; i < options.processes; i++) fork();
}
