/** MCP_ALLOWED_HOSTS (DNS-rebinding protection of /mcp): parsed once in config, host names without ports. */
import { describe, expect, it } from 'vitest';
import { hostnameOf, parseConfig } from '../config.ts';

describe('MCP_ALLOWED_HOSTS', () => {
  it('defaults to localhost in its three spellings, plus HOST when HOST names one host', () => {
    const local = ['localhost', '127.0.0.1', '[::1]'];
    expect(parseConfig({}).mcp.allowedHosts).toEqual(local);
    expect(parseConfig({ HOST: '0.0.0.0' }).mcp.allowedHosts).toEqual(local);
    expect(parseConfig({ HOST: '::' }).mcp.allowedHosts).toEqual(local);
    expect(parseConfig({ HOST: 'Analytics.Internal' }).mcp.allowedHosts).toEqual([...local, 'analytics.internal']);
    expect(parseConfig({ HOST: '10.0.0.5' }).mcp.allowedHosts).toEqual([...local, '10.0.0.5']);
  });

  it('a comma list replaces the default; ports are dropped; * accepts any Host; anything else is a config error', () => {
    expect(
      parseConfig({ MCP_ALLOWED_HOSTS: ' MCP.example.com:443 , [::1], 127.0.0.1:8080 ' }).mcp.allowedHosts,
    ).toEqual(['mcp.example.com', '[::1]', '127.0.0.1']);
    expect(parseConfig({ MCP_ALLOWED_HOSTS: '*' }).mcp.allowedHosts).toBe('*');
    expect(() => parseConfig({ MCP_ALLOWED_HOSTS: 'a.example/path' })).toThrow(/MCP_ALLOWED_HOSTS/);
    expect(() => parseConfig({ MCP_ALLOWED_HOSTS: 'user@a.example' })).toThrow(/MCP_ALLOWED_HOSTS/);
    expect(() => parseConfig({ MCP_ALLOWED_HOSTS: ' , ' })).toThrow(/at least one host/);
  });

  it('reads a Host header the way the SDK does: host name only, lower-cased, IPv6 in brackets', () => {
    expect(hostnameOf('localhost:8080')).toBe('localhost');
    expect(hostnameOf('LOCALHOST')).toBe('localhost');
    expect(hostnameOf('[::1]:3000')).toBe('[::1]');
    expect(hostnameOf('::1')).toBe('[::1]');
    expect(hostnameOf('127.0.0.1.evil.example:80')).toBe('127.0.0.1.evil.example');
    expect(hostnameOf('')).toBeNull();
    expect(hostnameOf('a b')).toBeNull();
    expect(hostnameOf('evil.example/localhost')).toBeNull();
  });
});
