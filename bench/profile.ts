// `npx tsx bench/profile.ts <scenario> [seconds]`: where the time of one scenario goes. Starts the built API
// (`node --cpu-prof dist/cli.js serve`) on a copy of the cached SQLite data set (run `npm run bench` or
// `npx tsx bench/data.ts` once first), drives the scenario with autocannon, stops the server and prints the
// functions with the most self time and the packages/files with the most inclusive time. The .cpuprofile file
// is kept under bench/.work/prof/ (open it in Chrome DevTools for the flame chart).
// Scenarios: token, courses, learners-10k, learners-1m, enrolments.   LOG_LEVEL is passed through (default info).
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { DATASET_VERSION, type Dataset } from './data.js';

const ROOT = new URL('..', import.meta.url).pathname;
const WORK = join(ROOT, 'bench/.work');
const PROF = join(WORK, 'prof');
const scenario = process.argv[2] ?? 'courses';
const seconds = Number(process.argv[3] ?? 10);

const pristine = join(WORK, `dataset-v${DATASET_VERSION}.sqlite`);
const ds = JSON.parse(readFileSync(`${pristine}.json`, 'utf8')) as Dataset;
rmSync(PROF, { recursive: true, force: true });
mkdirSync(PROF, { recursive: true });
copyFileSync(pristine, join(PROF, 'db.sqlite'));

const port = 20_000 + Math.floor(Math.random() * 20_000);
const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${PROF}`, 'dist/cli.js', 'serve'], {
  cwd: ROOT,
  env: {
    ...process.env,
    DATABASE_URL: `sqlite:${join(PROF, 'db.sqlite')}`,
    DATA_DIR: PROF,
    PORT: String(port),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1000000',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const base = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/healthz`)).ok) break;
  } catch {
    if (i > 300) throw new Error('the server did not start');
  }
  await new Promise((r) => setTimeout(r, 200));
}

const org = scenario === 'learners-1m' ? ds.orgs.big : scenario === 'enrolments' ? ds.orgs.enrol : ds.orgs.small;
const creds = { client_id: org.clientId, client_secret: org.clientSecret };
const token = ((await (await fetch(`${base}/v1/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(creds) })).json()) as { access_token: string }).access_token;
let n = 0;
const request: autocannon.Request =
  scenario === 'token'
    ? { method: 'POST', path: '/v1/oauth/token', headers: { 'content-type': 'application/json' }, body: JSON.stringify(creds) }
    : scenario === 'courses'
      ? { method: 'GET', path: '/v1/courses?limit=20', headers: { authorization: `Bearer ${token}` } }
      : scenario.startsWith('learners')
        ? { method: 'GET', path: '/v1/learners', headers: { authorization: `Bearer ${token}` }, setupRequest: (r: any) => ({ ...r, path: `/v1/learners?limit=100&cursor=${org.midCursors[n++ % org.midCursors.length]}` }) }
        : {
            method: 'POST',
            path: '/v1/enrolments',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            setupRequest: (r: any) => {
              const i = n++;
              const learner = ds.enrolLearnerIds[i % ds.enrolLearnerIds.length];
              const course = ds.courseIds[Math.floor(i / ds.enrolLearnerIds.length) % ds.courseIds.length];
              return { ...r, body: JSON.stringify({ learner_id: learner, course_id: course }) };
            },
          };
const result = await autocannon({ url: base, connections: 50, duration: seconds, requests: [request as never] });
console.log(`${scenario}: ${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}`);
child.kill('SIGINT');
await new Promise((r) => child.once('exit', r));

const file = readdirSync(PROF).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error('no profile written');
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const profile = JSON.parse(readFileSync(join(PROF, file), 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
// Only the samples of the measured load count: start-up (module loading, schema compilation) would drown them.
// The load is the last `seconds` of the profile, before a short shutdown.
const at: number[] = [];
profile.timeDeltas.reduce((t, d, i) => (at[i] = t + d), 0);
const end = at[at.length - 1];
profile.samples = profile.samples.filter((_, i) => at[i] >= end - (seconds + 0.3) * 1e6 && at[i] <= end - 0.3e6);
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node.id);
const counts = new Map<number, number>();
for (const s of profile.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
const total = profile.samples.length;
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const where = (url: string) => url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, 'dist/').split('/').slice(0, 2).join('/') || '(native)';
for (const [id, count] of counts) {
  const node = byId.get(id)!;
  const key = `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber}`;
  self.set(key, (self.get(key) ?? 0) + count);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const k = where(byId.get(cur)!.callFrame.url);
    if (!seen.has(k)) {
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + count);
    }
  }
}
const top = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([name, c]) => `${((100 * c) / total).toFixed(1).padStart(5)}%  ${name}`);
console.log('\nself time (top 25):\n' + top(self, 25).join('\n'));
console.log('\ninclusive time by package / file (top 25):\n' + top(inclusive, 25).join('\n'));
console.log(`\nprofile: ${join(PROF, file)}`);
