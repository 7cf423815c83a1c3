// Child processes for the webhook crash and scale-out tests: `lmsapi serve` and `lmsapi worker` started from the
// TypeScript source against a database made by freshDatabase().
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Child {
  process: ChildProcess;
  lines: string[];
  stderr(): string;
  /** Resolves with the first stdout line matching the pattern. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves when the process has exited, with its code or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startLmsapi(args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  const listeners: ((line: string) => void)[] = [];
  child.stderr!.on('data', (d) => (stderr += d));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const l of listeners) l(line);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    process: child,
    lines,
    stderr: () => stderr,
    exited,
    waitForLine(pattern, timeoutMs = 90_000) {
      return new Promise((resolve, reject) => {
        const found = lines.map((l) => pattern.exec(l)).find(Boolean);
        if (found) return resolve(found);
        const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
        listeners.push((line) => {
          const m = pattern.exec(line);
          if (m) {
            clearTimeout(timer);
            resolve(m);
          }
        });
        void exited.then(({ code, signal }) => {
          clearTimeout(timer);
          reject(new Error(`process exited (${code ?? signal}) before printing ${pattern}; stderr: ${stderr}`));
        });
      });
    },
  };
}
