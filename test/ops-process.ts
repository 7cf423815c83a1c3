// Runs `lmsapi serve` as a child process (node --import tsx src/cli.ts serve) on a port of its choosing, for tests
// of signals, shutdown and restarts. Standard output (JSON log lines and the banner) is kept for inspection.
import { spawn, type ChildProcess } from 'node:child_process';

const ROOT = new URL('..', import.meta.url).pathname;

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  port: number;
  output(): string;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

const spawned = new Set<ChildProcess>();

/** Kills every service process a test started that is still running (call from afterEach: no orphans). */
export async function killServices(): Promise<void> {
  await Promise.all(
    [...spawned].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  spawned.clear();
}

export async function startService(env: Record<string, string>, args: string[] = ['serve']): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.add(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start in 150 s:\n${out}`)), 150_000);
    const check = () => {
      const m = /listening on (https?:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout!.on('data', check);
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening:\n${out}`));
    });
  });
  return { child, url, port: Number(new URL(url).port), output: () => out, exited };
}
