/** Test helpers of the upstream poller: a virtual clock (time passes only when someone waits). */
import type { Clock } from './http-client.ts';

export class VirtualClock implements Clock {
  /** Every wait asked for, in order (ms). */
  readonly sleeps: number[] = [];

  constructor(public t = 1_800_000_000_000) {}

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    this.sleeps.push(ms);
    this.t += ms;
    return Promise.resolve();
  }

  advance(ms: number): void {
    this.t += ms;
  }
}

/** A `fetch` that answers from a function of the request, and records what it was asked. */
export function scriptedFetch(
  answer: (url: URL, call: number) => Response | Promise<Response>,
): typeof fetch & { calls: URL[] } {
  const calls: URL[] = [];
  const impl = (async (input: string | URL | Request) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    calls.push(url);
    return answer(url, calls.length);
  }) as typeof fetch & { calls: URL[] };
  impl.calls = calls;
  return impl;
}

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}
