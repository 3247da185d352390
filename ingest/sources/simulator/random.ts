/**
 * Deterministic randomness for the simulator. Nothing here reads a clock or Math.random: every draw is
 * a function of the seed and of a key naming what is drawn (a market, a trader, a second), so that any
 * part of the world can be generated on its own, in any chunking, and come out the same.
 */

/** Murmur3's finalizer: a bijection on 32-bit words with good avalanche. */
export function fmix32(word: number): number {
  let h = word >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Mixes two words into one; order matters. */
export function mix32(a: number, b: number): number {
  return fmix32((a ^ Math.imul(fmix32(b) + 0x9e3779b9, 0x27d4eb2d)) >>> 0);
}

/** FNV-1a over the UTF-16 code units, finalized; stable across platforms. */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return fmix32(hash);
}

export type KeyPart = string | number;

/** One 32-bit word naming a thing to draw for, e.g. `keyOf(seed, 'market', slug)`. */
export function keyOf(...parts: readonly KeyPart[]): number {
  let hash = 0x2545f491;
  for (const part of parts) {
    hash = mix32(hash, typeof part === 'number' ? numberWord(part) : hashString(part));
  }
  return hash;
}

/** Integers (also beyond 32 bits, such as epoch seconds times a factor) and fractions hash distinctly. */
function numberWord(value: number): number {
  if (Number.isInteger(value) && Math.abs(value) < 2 ** 53) {
    const low = value % 2 ** 32;
    const high = Math.floor(value / 2 ** 32);
    return mix32(low >>> 0, high >>> 0);
  }
  return hashString(String(value));
}

/** Uniform in [0, 1) from one 32-bit word. */
export function unitOf(word: number): number {
  return (word >>> 0) / 4_294_967_296;
}

/**
 * A sequential generator (sfc32) for things drawn once, in one go: a market's price path, a trader's
 * plan in a market, the roster of traders.
 */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spareNormal: number | null = null;

  constructor(key: number) {
    this.a = fmix32(key ^ 0xa0761d65);
    this.b = fmix32(key ^ 0xe7037ed1);
    this.c = fmix32(key ^ 0x8ebc6af0);
    this.d = 1;
    for (let warmup = 0; warmup < 12; warmup++) this.nextWord();
  }

  static of(...parts: readonly KeyPart[]): Rng {
    return new Rng(keyOf(...parts));
  }

  nextWord(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextWord() / 4_294_967_296;
  }

  /** Integer in [0, count). */
  below(count: number): number {
    return Math.floor(this.next() * count);
  }

  /** Integer in [low, high], both included. */
  intBetween(low: number, high: number): number {
    return low + this.below(high - low + 1);
  }

  between(low: number, high: number): number {
    return low + (high - low) * this.next();
  }

  /** Sizes of money spread over orders of magnitude: uniform in log space. */
  logUniform(low: number, high: number): number {
    return Math.exp(Math.log(low) + (Math.log(high) - Math.log(low)) * this.next());
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[this.below(items.length)];
    if (item === undefined) throw new RangeError('pick from an empty list');
    return item;
  }

  /** Standard normal (Box-Muller, both values used). */
  normal(): number {
    if (this.spareNormal !== null) {
      const spare = this.spareNormal;
      this.spareNormal = null;
      return spare;
    }
    const u = 1 - this.next();
    const v = this.next();
    const radius = Math.sqrt(-2 * Math.log(u));
    this.spareNormal = radius * Math.sin(2 * Math.PI * v);
    return radius * Math.cos(2 * Math.PI * v);
  }

  exponential(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }
}

/**
 * Counter-based draws: the k-th draw of a second depends only on (key, second, k). A market's
 * anonymous order flow uses these, so that any second can be generated without replaying the ones
 * before it.
 */
export class SecondDraws {
  private base = 0;
  private salt = 0;
  private counter = 0;

  reset(key: number, second: number): void {
    this.base = mix32(key, second);
    this.salt = fmix32(key ^ 0x5bd1e995);
    this.counter = 0;
  }

  next(): number {
    this.counter++;
    return unitOf(fmix32((fmix32(this.base ^ Math.imul(this.counter, 0x9e3779b1)) + this.salt) >>> 0));
  }

  /** Poisson count (Knuth's product of uniforms; fine for the small rates of one second). */
  poisson(rate: number): number {
    if (rate <= 0) return 0;
    const limit = Math.exp(-rate);
    let count = 0;
    let product = this.next();
    while (product > limit) {
      count++;
      product *= this.next();
    }
    return count;
  }

  logUniform(low: number, high: number): number {
    return Math.exp(Math.log(low) + (Math.log(high) - Math.log(low)) * this.next());
  }
}

/** Standard normal CDF (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-x * x);
  return z >= 0 ? 0.5 * (1 + erf) : 0.5 * (1 - erf);
}
