// Helpers for the operations tests: a strict Prometheus text-format parser, and rows in the webhook tables
// (written directly, so retention and the delivery gauges can be tested without the worker).
import type { AppContext } from '../src/context.js';
import { iso } from '../src/clock.js';
import { newId } from '../src/ids.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  help: Map<string, string>;
  samples: Sample[];
  /** The value of one sample (labels must match exactly), or undefined. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"`;
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (\\S+)(?: (-?\\d+))?$`);
// Values are what Go's strconv.ParseFloat accepts (the format's definition): NaN and Inf in any letter case.
const VALUE = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf(?:inity)?|nan)$/i;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/**
 * Parses the Prometheus text exposition format (0.0.4) strictly: every line must be HELP, TYPE, a comment, or a
 * well-formed sample of a family whose TYPE came first; no family is declared twice, no sample repeats, and
 * histograms have cumulative buckets ending in +Inf that equal their _count.
 */
export function parsePrometheus(text: string): Exposition {
  if (!text.endsWith('\n')) throw new Error('exposition must end with a line feed');
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  const lines = text.slice(0, -1).split('\n');
  lines.forEach((line, i) => {
    const where = `line ${i + 1}: ${line}`;
    if (line === '') return;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) return; // a plain comment
      if (!new RegExp(`^${NAME}$`).test(m[2])) throw new Error(`bad metric name in ${where}`);
      if (m[1] === 'TYPE') {
        if (!TYPES.has(m[3])) throw new Error(`unknown type in ${where}`);
        if (types.has(m[2])) throw new Error(`TYPE declared twice in ${where}`);
        types.set(m[2], m[3]);
      } else {
        if (help.has(m[2])) throw new Error(`HELP declared twice in ${where}`);
        help.set(m[2], m[3]);
      }
      return;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`malformed sample in ${where}`);
    const name = m[1];
    const labels: Record<string, string> = {};
    if (m[2]) {
      for (const lm of m[2].matchAll(new RegExp(LABEL, 'g'))) {
        if (lm[1] in labels) throw new Error(`label repeated in ${where}`);
        labels[lm[1]] = lm[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      }
    }
    if (!VALUE.test(m[m.length - 2])) throw new Error(`bad value in ${where}`);
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count|total|created)$/, '');
    if (!types.has(family)) throw new Error(`sample before its TYPE in ${where}`);
    const key = name + JSON.stringify(Object.entries(labels).sort());
    if (seen.has(key)) throw new Error(`sample repeated in ${where}`);
    seen.add(key);
    const raw = m[m.length - 2];
    const lower = raw.toLowerCase();
    const value = lower === 'nan' ? NaN : /inf/.test(lower) ? (lower.startsWith('-') ? -Infinity : Infinity) : Number(raw);
    samples.push({ name, labels, value });
  });
  // Histograms: buckets cumulative, +Inf present and equal to _count.
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const groups = new Map<string, Sample[]>();
    for (const s of samples.filter((x) => x.name === `${family}_bucket`)) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${family} bucket without le`);
      const k = JSON.stringify(Object.entries(rest).sort());
      groups.set(k, [...(groups.get(k) ?? []), s]);
    }
    for (const [k, buckets] of groups) {
      const les = buckets.map((b) => (b.labels.le === '+Inf' ? Infinity : Number(b.labels.le)));
      for (let j = 1; j < buckets.length; j++) {
        if (!(les[j] > les[j - 1]) || buckets[j].value < buckets[j - 1].value) throw new Error(`${family} buckets not cumulative`);
      }
      if (les[les.length - 1] !== Infinity) throw new Error(`${family} has no +Inf bucket`);
      const count = samples.find((s) => s.name === `${family}_count` && JSON.stringify(Object.entries(s.labels).sort()) === k);
      if (!count || count.value !== buckets[buckets.length - 1].value) throw new Error(`${family}_count does not match its +Inf bucket`);
    }
  }
  const same = (a: Record<string, string>, b: Record<string, string>) =>
    JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
  return {
    types,
    help,
    samples,
    value: (name, labels = {}) => samples.find((s) => s.name === name && same(s.labels, labels))?.value,
  };
}

/** An event with one delivery (and optionally attempts) on a fresh endpoint of the organization. */
export async function eventWithDelivery(
  ctx: AppContext,
  orgId: string,
  opts: { at: Date; status?: 'pending' | 'succeeded' | 'failed'; attempts?: number },
): Promise<{ eventId: string; deliveryId: string; endpointId: string }> {
  const at = iso(opts.at);
  const endpointId = newId('webhook');
  const deliveryId = newId('delivery');
  let eventId = '';
  await ctx.db.kysely.transaction().execute(async (trx) => {
    await trx
      .insertInto('webhook_endpoints')
      .values({
        id: endpointId, org_id: orgId, url: 'https://hooks.example.test/x', events: '["*"]', description: null, status: 'enabled',
        disabled_reason: null, secret: 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0', previous_secret: null,
        previous_secret_expires_at: null, created_at: at, updated_at: at,
      })
      .execute();
    // Written directly (not through recordEvent) so the outbox adds no deliveries of its own.
    const event = { id: newId('event'), object: 'event', type: 'webhook.test', created_at: at, data: { object: { id: endpointId } } };
    await trx.insertInto('events').values({ id: event.id, org_id: orgId, type: event.type, payload: JSON.stringify(event), created_at: at }).execute();
    eventId = event.id;
    await trx
      .insertInto('webhook_deliveries')
      .values({
        id: deliveryId, org_id: orgId, endpoint_id: endpointId, event_id: event.id, status: opts.status ?? 'pending',
        attempts: opts.attempts ?? 0, next_attempt_at: at, lease_owner: null, lease_expires_at: null, last_attempt_at: null,
        last_status_code: null, created_at: at, updated_at: at,
      })
      .execute();
    for (let i = 0; i < (opts.attempts ?? 0); i++) {
      await trx
        .insertInto('webhook_attempts')
        .values({
          id: newId('attempt'), org_id: orgId, delivery_id: deliveryId, endpoint_id: endpointId, attempted_at: at, status_code: 500,
          duration_ms: 12, response_excerpt: 'oops', error: null,
        })
        .execute();
    }
  });
  return { eventId, deliveryId, endpointId };
}
