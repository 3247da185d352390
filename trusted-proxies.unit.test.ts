import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTrustedProxies, WIDEST_PUBLIC_RANGE } from './trusted-proxies.ts';

function refusal(value: string): string | undefined {
  return parseTrustedProxies(value).problems[0];
}

describe('API_TRUST_PROXY ranges taken together', () => {
  it('refuses every address in two halves, as it refuses it whole', () => {
    expect(refusal('0.0.0.0/1,128.0.0.0/1')).toMatch(/^"0\.0\.0\.0\/1", "128\.0\.0\.0\/1" together trust every IPv4/);
    expect(refusal('::/1, 8000::/1')).toMatch(/^"::\/1", "8000::\/1" together trust every IPv6/);
    expect(refusal('0.0.0.0/0')).toMatch(/^"0\.0\.0\.0\/0" trusts every IPv4 address/);
    // The IPv4-mapped block is every IPv4 client to the proxy check.
    expect(refusal('::ffff:0:0/97,128.0.0.0/1')).toMatch(/together trust every IPv4/);
  });

  it('refuses a public stretch wider than the stated prefix, alone or side by side', () => {
    expect(WIDEST_PUBLIC_RANGE).toEqual({ ipv4: 12, ipv6: 28 });
    expect(refusal('8.0.0.0/11')).toMatch(/^"8\.0\.0\.0\/11" trusts 2,097,152 public IPv4 addresses, more than a \/12/);
    expect(refusal('8.0.0.0/12,8.16.0.0/12')).toMatch(
      /^"8\.0\.0\.0\/12", "8\.16\.0\.0\/12" together trust 2,097,152 public IPv4 addresses/,
    );
    expect(refusal('2000::/3')).toMatch(/"2000::\/3" trusts .* public IPv6 addresses, more than a \/28/);
  });

  it('takes private networks of any width and proxy fleets within the prefix', () => {
    const accepted =
      '10.0.0.0/8, 172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7,8.0.0.0/12,2001:db8::/32,loopback';
    expect(parseTrustedProxies(accepted)).toEqual({
      proxies: accepted.split(',').map((entry) => entry.trim()),
      problems: [],
    });
    // A private block beside a public one counts only the public addresses.
    expect(refusal('10.0.0.0/8,11.0.0.0/12')).toBeUndefined();
  });

  it('still refuses true, hop counts and what is no address', () => {
    expect(refusal('true')).toMatch(/would trust X-Forwarded-For from any client/);
    expect(refusal('2')).toMatch(/would trust X-Forwarded-For from any client/);
    expect(refusal('10.0.0.0/33')).toMatch(/"10\.0\.0\.0\/33" is not a proxy address or CIDR/);
    expect(refusal('proxy.example')).toMatch(/is not a proxy address or CIDR/);
    expect(parseTrustedProxies('')).toEqual({ proxies: [], problems: [] });
  });

  it('gives one verdict however a range is split or ordered', () => {
    const ipv4Cidr = fc
      .tuple(fc.nat({ max: 0xffff_ffff }), fc.integer({ min: 0, max: 31 }))
      .map(([value, prefix]) => ({ value: prefix === 0 ? 0 : value & (~(2 ** (32 - prefix) - 1) >>> 0), prefix }));
    const dotted = (value: number) => [24, 16, 8, 0].map((shift) => (value >>> shift) & 255).join('.');
    fc.assert(
      fc.property(fc.array(ipv4Cidr, { minLength: 1, maxLength: 6 }), fc.nat(), (cidrs, pick) => {
        const listed = cidrs.map(({ value, prefix }) => `${dotted(value >>> 0)}/${prefix}`);
        const index = pick % cidrs.length;
        const { value, prefix } = cidrs[index] as { value: number; prefix: number };
        const half = 2 ** (32 - prefix - 1);
        const split = [
          ...listed.slice(0, index),
          `${dotted(value >>> 0)}/${prefix + 1}`,
          `${dotted((value + half) >>> 0)}/${prefix + 1}`,
          ...listed.slice(index + 1),
        ];
        const whole = refusal(listed.join(',')) === undefined;
        expect(refusal(split.join(',')) === undefined).toBe(whole);
        expect(refusal([...listed].reverse().join(',')) === undefined).toBe(whole);
      }),
    );
  });
});
