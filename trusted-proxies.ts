/**
 * API_TRUST_PROXY: the proxies whose X-Forwarded-For is believed, as the list Fastify's trustProxy takes.
 *
 * Trusting a range means believing whatever any address in it writes into X-Forwarded-For: the address
 * guard (`too_many_auth_failures`) could then be escaped by rotating the header, and turned against an
 * innocent address by forging it. So the list is refused when its ranges, taken together, trust every
 * IPv4 or every IPv6 address (`0.0.0.0/1,128.0.0.0/1` is `0.0.0.0/0` in two halves), or more public
 * addresses than one wide proxy fleet holds (`WIDEST_PUBLIC_RANGE`). Private ranges (RFC 1918, carrier-grade
 * NAT, loopback, link-local, unique-local) are a deployment's own network and may be as wide as they are.
 *
 * Addresses are compared in one 128-bit space where an IPv4 address is its IPv4-mapped IPv6 form, as the
 * proxy check matches an IPv4 client against an IPv6 range.
 */
import ipaddr from 'ipaddr.js';

/** Named ranges of Fastify's proxy check: small, private, never the whole space. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * The widest public range the entries may trust together, as a prefix length per family: wide enough for a
 * CDN's published edge blocks, far narrower than a continent's allocations.
 */
export const WIDEST_PUBLIC_RANGE = { ipv4: 12, ipv6: 28 } as const;

const MAPPED_IPV4_BASE = 0xffff_0000_0000n;
const IPV4_SPACE = 1n << 32n;
const IPV6_SPACE = 1n << 128n;

interface Interval {
  low: bigint;
  high: bigint;
}

interface EntryRange extends Interval {
  entry: string;
}

/** Ranges no outsider holds: a proxy there is the deployment's own. IPv4 ones are given in their mapped form. */
const PRIVATE_RANGES: readonly Interval[] = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '::1/128',
  'fc00::/7',
  'fe80::/10',
].map((cidr) => {
  const [address = '', prefix = ''] = cidr.split('/');
  return cidrInterval(address, Number(prefix));
});

const ALL_IPV4: Interval = { low: MAPPED_IPV4_BASE, high: MAPPED_IPV4_BASE + IPV4_SPACE - 1n };

function addressValue(address: string): bigint {
  const parsed = ipaddr.parse(address);
  const bytes = parsed.toByteArray();
  const value = bytes.reduce((sum, byte) => (sum << 8n) | BigInt(byte), 0n);
  return parsed.kind() === 'ipv4' ? MAPPED_IPV4_BASE + value : value;
}

function cidrInterval(address: string, prefix: number): Interval {
  const isV4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  const size = 1n << BigInt((isV4 ? 32 : 128) - prefix);
  const low = addressValue(address) & ~(size - 1n);
  return { low, high: low + size - 1n };
}

/** The entries' ranges merged where they touch or overlap, each with the entries that make it. */
function mergedRanges(ranges: readonly EntryRange[]): { interval: Interval; entries: string[] }[] {
  const merged: { interval: Interval; entries: string[] }[] = [];
  for (const range of [...ranges].sort((a, b) => (a.low < b.low ? -1 : a.low > b.low ? 1 : 0))) {
    const last = merged.at(-1);
    if (last && range.low <= last.interval.high + 1n) {
      if (range.high > last.interval.high) last.interval.high = range.high;
      last.entries.push(range.entry);
    } else merged.push({ interval: { low: range.low, high: range.high }, entries: [range.entry] });
  }
  return merged;
}

function overlap(a: Interval, b: Interval): bigint {
  const low = a.low > b.low ? a.low : b.low;
  const high = a.high < b.high ? a.high : b.high;
  return high >= low ? high - low + 1n : 0n;
}

function covers(merged: readonly { interval: Interval }[], target: Interval): boolean {
  return merged.some(({ interval }) => interval.low <= target.low && interval.high >= target.high);
}

/** `"a" trusts` or `"a", "b" together trust`: the entries a refusal is about, as its subject. */
function subjectOf(entries: readonly string[]): string {
  const quoted = entries.map((entry) => `"${entry}"`).join(', ');
  return entries.length === 1 ? `${quoted} trusts` : `${quoted} together trust`;
}

/**
 * Why the entries must not be trusted, or undefined when they may: every IPv4 or every IPv6 address
 * trusted, or a public stretch wider than WIDEST_PUBLIC_RANGE (one entry, or several side by side).
 */
function tooWide(ranges: readonly EntryRange[]): string | undefined {
  const merged = mergedRanges(ranges);
  const ipv4 = merged.filter(({ interval }) => overlap(interval, ALL_IPV4) > 0n);
  // Every IPv6 address outside the IPv4-mapped block, which the IPv4 check below judges.
  if (covers(mergedRanges([...ranges, { ...ALL_IPV4, entry: '' }]), { low: 0n, high: IPV6_SPACE - 1n }))
    return `${subjectOf(ranges.map(({ entry }) => entry))} every IPv6 address`;
  if (covers(merged, ALL_IPV4)) return `${subjectOf(ipv4.flatMap(({ entries }) => entries))} every IPv4 address`;
  for (const { interval, entries } of merged) {
    const inIpv4 = overlap(interval, ALL_IPV4);
    const isV4 = inIpv4 === interval.high - interval.low + 1n;
    const publicAddresses =
      interval.high -
      interval.low +
      1n -
      PRIVATE_RANGES.reduce((privateCount, range) => privateCount + overlap(interval, range), 0n);
    const limitPrefix = isV4 ? WIDEST_PUBLIC_RANGE.ipv4 : WIDEST_PUBLIC_RANGE.ipv6;
    const limit = 1n << BigInt((isV4 ? 32 : 128) - limitPrefix);
    if (publicAddresses > limit) {
      const family = isV4 ? 'IPv4' : 'IPv6';
      return `${subjectOf(entries)} ${publicAddresses.toLocaleString('en-US')} public ${family} addresses, more than a /${limitPrefix}`;
    }
  }
  return undefined;
}

/** Parsed entries, or the reasons the value is refused (each names the entries it is about). */
export function parseTrustedProxies(value: string): { proxies: string[]; problems: string[] } {
  const text = value.trim().toLowerCase();
  if (text === '' || text === 'false' || text === 'none') return { proxies: [], problems: [] };
  if (text === 'true' || /^\d+$/.test(text))
    return {
      proxies: [],
      problems: [
        `"${value}" would trust X-Forwarded-For from any client, so anyone could spoof their address (escape too_many_auth_failures, or get another address blocked). List your proxies' addresses or CIDRs instead, e.g. API_TRUST_PROXY=10.0.0.0/8 or 127.0.0.1`,
      ],
    };
  const proxies = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  const problems: string[] = [];
  const ranges: EntryRange[] = [];
  for (const entry of proxies) {
    if (PROXY_RANGE_NAMES.has(entry)) continue;
    const [address = '', prefix, ...rest] = entry.split('/');
    const isV4 = ipaddr.IPv4.isValidFourPartDecimal(address);
    const isV6 = !isV4 && ipaddr.IPv6.isValid(address);
    const bits = isV4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if ((!isV4 && !isV6) || !prefixOk || rest.length > 0) {
      problems.push(`"${entry}" is not a proxy address or CIDR (e.g. 10.0.0.1, 10.0.0.0/8, 2001:db8::/32, loopback)`);
      continue;
    }
    ranges.push({ entry, ...cidrInterval(address, prefix === undefined ? bits : Number(prefix)) });
  }
  const wide = problems.length === 0 ? tooWide(ranges) : undefined;
  if (wide)
    problems.push(
      `${wide}: anyone there could spoof their address, as with \`true\`. List your proxies' addresses or CIDRs instead, e.g. API_TRUST_PROXY=10.0.0.0/8 or 127.0.0.1`,
    );
  return { proxies, problems };
}
