// The webhook URL guard (§4 "Targets"): https only, and no target on loopback, private, link-local, CGNAT,
// multicast, documentation, reserved or otherwise special addresses — checked when an endpoint is registered
// and again on the address actually connected to (so DNS rebinding fails). The WHATWG URL parser already
// normalises the odd IPv4 spellings (`2130706433`, `127.1`, `0x7f.1`, `0177.0.0.1`) to dotted quads, so every
// literal is judged in its canonical form. IPv6 forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible,
// NAT64, 6to4, Teredo) are refused whole: no legitimate receiver needs them.
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';

/** The shape of `dns.lookup` with `{all: true}` (injectable so tests control what a name resolves to). */
export type ResolveAll = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolveAll: ResolveAll = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

export interface UrlPolicy {
  allowHttp: boolean;
  allowPrivateNetworks: boolean;
}

export class WebhookUrlError extends Error {}

const IPV4_RANGES: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.31.196.0', 24, 'AS112'],
  ['192.52.193.0', 24, 'AMT'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private'],
  ['192.175.48.0', 24, 'AS112'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'], // includes 255.255.255.255 (broadcast)
];
const IPV6_RANGES: [string, number, string][] = [
  ['::', 96, 'unspecified, loopback or IPv4-compatible'], // ::, ::1 and ::a.b.c.d
  ['::ffff:0:0', 96, 'IPv4-mapped'],
  ['::ffff:0:0:0', 96, 'IPv4-translated'],
  ['64:ff9b::', 96, 'NAT64'],
  ['64:ff9b:1::', 48, 'NAT64 (local use)'],
  ['100::', 64, 'discard-only'],
  ['2001::', 23, 'IETF protocol assignments (Teredo, benchmarking, ORCHID)'],
  ['2001:db8::', 32, 'documentation'],
  ['2002::', 16, '6to4'],
  ['3fff::', 20, 'documentation'],
  ['5f00::', 16, 'segment routing'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];
// Two lists: a BlockList also matches IPv4 addresses against IPv6 rules (as IPv4-mapped), and ::ffff:0:0/96 is
// refused whole, which would otherwise refuse every IPv4 address.
const BLOCKED_V4 = new BlockList();
const BLOCKED_V6 = new BlockList();
for (const [net, prefix] of IPV4_RANGES) BLOCKED_V4.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of IPV6_RANGES) BLOCKED_V6.addSubnet(net, prefix, 'ipv6');

function rangeName(address: string, family: 4 | 6): string {
  const list = family === 4 ? IPV4_RANGES : IPV6_RANGES;
  for (const [net, prefix, name] of list) {
    const one = new BlockList();
    one.addSubnet(net, prefix, family === 4 ? 'ipv4' : 'ipv6');
    if (one.check(address, family === 4 ? 'ipv4' : 'ipv6')) return name;
  }
  return 'reserved';
}

/** Why an IP address may not be a webhook target, or null when it may. */
export function forbiddenAddressReason(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return `"${address}" is not an IP address`;
  const blocked = family === 4 ? BLOCKED_V4.check(address, 'ipv4') : BLOCKED_V6.check(address, 'ipv6');
  if (!blocked) return null;
  return `${address} is a ${rangeName(address, family as 4 | 6)} address`;
}

/** The hostname as it goes to DNS or the socket: IPv6 brackets and a trailing root dot removed, lower case. */
export function bareHostname(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost') || host === 'localhost.localdomain';
}

/** Parses and checks everything about a URL that needs no DNS: scheme, credentials, literal addresses, localhost. */
export function checkUrlShape(raw: string, policy: UrlPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError('The URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'https:' && !(policy.allowHttp && url.protocol === 'http:')) {
    throw new WebhookUrlError(policy.allowHttp ? 'The URL must use https:// or http://.' : 'The URL must use https://.');
  }
  if (url.username || url.password) throw new WebhookUrlError('The URL must not contain a user name or password.');
  if (url.hash) throw new WebhookUrlError('The URL must not contain a fragment (#...).');
  const host = bareHostname(url);
  if (!host) throw new WebhookUrlError('The URL has no host.');
  if (policy.allowPrivateNetworks) return url;
  if (isLocalhostName(host)) throw new WebhookUrlError(`"${host}" is a loopback name.`);
  if (isIP(host)) {
    const reason = forbiddenAddressReason(host);
    if (reason) throw new WebhookUrlError(`The URL points at ${reason}; only public addresses are allowed.`);
  } else if (!host.includes('.')) {
    // A single-label name only resolves through a local search domain: an internal host by definition.
    throw new WebhookUrlError(`"${host}" is not a fully qualified public host name.`);
  }
  return url;
}

/**
 * The full registration check: the shape, then (for host names, unless private networks are allowed) every
 * address the name resolves to. A name that does not resolve is refused too: we could not deliver to it.
 */
export async function checkWebhookUrl(raw: string, policy: UrlPolicy, resolveAll: ResolveAll = systemResolveAll): Promise<URL> {
  const url = checkUrlShape(raw, policy);
  const host = bareHostname(url);
  if (policy.allowPrivateNetworks || isIP(host)) return url;
  let addresses: LookupAddress[];
  try {
    addresses = await resolveAll(host);
  } catch (err) {
    throw new WebhookUrlError(`"${host}" does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'}).`);
  }
  if (addresses.length === 0) throw new WebhookUrlError(`"${host}" does not resolve.`);
  for (const a of addresses) {
    const reason = forbiddenAddressReason(a.address);
    if (reason) throw new WebhookUrlError(`"${host}" resolves to ${reason}; only public addresses are allowed.`);
  }
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect (undici's `connect.lookup`) that refuses forbidden addresses: the check runs on
 * the very address the socket will connect to. Literal IP hosts never reach a lookup function, so the worker
 * checks those itself before sending (checkUrlShape).
 */
export function guardedLookup(policy: UrlPolicy, resolveAll: ResolveAll = systemResolveAll) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolveAll(hostname).then(
      (all) => {
        let candidates = all;
        if (options.family === 4 || options.family === 6) candidates = all.filter((a) => a.family === options.family);
        if (!policy.allowPrivateNetworks) {
          const bad = candidates.map((a) => forbiddenAddressReason(a.address)).find((r) => r !== null);
          if (bad) {
            const err: NodeJS.ErrnoException = new Error(`refused to connect: "${hostname}" resolves to ${bad}`);
            err.code = 'EWEBHOOKTARGET';
            return callback(err, '', 0);
          }
        }
        if (candidates.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`"${hostname}" does not resolve`);
          err.code = 'ENOTFOUND';
          return callback(err, '', 0);
        }
        if (options.all) return callback(null, candidates);
        callback(null, candidates[0].address, candidates[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}
