/**
 * The fixed vocabulary of the simulated world: assets of the crypto Up/Down markets, political
 * questions, sports teams, and the words display names are made of.
 */

export interface CryptoAsset {
  /** Slug prefix of the 5- and 15-minute markets, e.g. `btc-updown-15m-…`. */
  code: string;
  /** Name in titles and in hourly slugs, e.g. "Bitcoin Up or Down - …". */
  name: string;
  icon: string;
}

const ICON_BASE = 'https://example.com/simulator/icons';

export const CRYPTO_ASSETS: readonly CryptoAsset[] = [
  { code: 'btc', name: 'Bitcoin', icon: `${ICON_BASE}/btc.png` },
  { code: 'eth', name: 'Ethereum', icon: `${ICON_BASE}/eth.png` },
  { code: 'sol', name: 'Solana', icon: `${ICON_BASE}/sol.png` },
  { code: 'xrp', name: 'XRP', icon: `${ICON_BASE}/xrp.png` },
];

export const POLITICS_ICON = `${ICON_BASE}/politics.png`;

/** `{date}` is replaced by the resolution date in Eastern time ("March 4"). Fictional, no real people. */
export const POLITICS_QUESTIONS: readonly string[] = [
  'Fed rate cut by {date}?',
  'US government shutdown by {date}?',
  'Will the Senate pass the budget resolution by {date}?',
  'Will the House pass the farm bill by {date}?',
  'Will the tariff pause be extended by {date}?',
  'Will the Supreme Court rule on the ballot case by {date}?',
  'Will the debt ceiling be raised by {date}?',
  'Will the governor sign the housing bill by {date}?',
  'Will the trade deal be announced by {date}?',
  'Will the cabinet nominee be confirmed by {date}?',
  'Will the ceasefire hold until {date}?',
  'Will the election recount finish by {date}?',
];

export interface SportsLeague {
  code: string;
  teams: readonly string[];
  icon: string;
}

export const SPORTS_LEAGUES: readonly SportsLeague[] = [
  {
    code: 'nhl',
    icon: `${ICON_BASE}/nhl.png`,
    teams: [
      'Oilers',
      'Ducks',
      'Flames',
      'Canucks',
      'Kings',
      'Sharks',
      'Kraken',
      'Jets',
      'Wild',
      'Stars',
      'Avalanche',
      'Blues',
    ],
  },
  {
    code: 'nba',
    icon: `${ICON_BASE}/nba.png`,
    teams: [
      'Lakers',
      'Celtics',
      'Warriors',
      'Knicks',
      'Bulls',
      'Heat',
      'Suns',
      'Nuggets',
      'Bucks',
      'Mavericks',
      'Spurs',
      'Thunder',
    ],
  },
];

/** Stems of lower-case handles ("gabagool22", "kch123"). */
export const HANDLE_STEMS: readonly string[] = [
  'gabagool',
  'swisstony',
  'kch',
  'theo',
  'fredi',
  'zxgngl',
  'maz',
  'degen',
  'mooncat',
  'len',
  'qwerty',
  'bayes',
  'tails',
  'yolo',
  'kelly',
  'edge',
  'sharpie',
  'frontrun',
  'delta',
  'gamma',
  'vega',
  'oddsman',
  'pmfan',
  'hodl',
  'tophat',
  'nakamo',
  'satsu',
  'quant',
  'lucky',
  'pepe',
  'wagmi',
  'rekt',
  'ape',
  'bidask',
  'spread',
  'tick',
];

/** Words of CamelCase names ("CandleHammerDrums") and of pseudonyms ("Grown-Cantaloupe"). */
export const NAME_ADJECTIVES: readonly string[] = [
  'Grown',
  'Silent',
  'Lucky',
  'Brave',
  'Quiet',
  'Rapid',
  'Golden',
  'Crimson',
  'Frozen',
  'Hollow',
  'Mellow',
  'Rusty',
  'Shiny',
  'Sleepy',
  'Tidy',
  'Wild',
  'Witty',
  'Zesty',
  'Bold',
  'Calm',
  'Clever',
  'Dusty',
  'Eager',
  'Fuzzy',
];

export const NAME_NOUNS: readonly string[] = [
  'Cantaloupe',
  'Falcon',
  'Tiger',
  'Candle',
  'Hammer',
  'Drums',
  'Otter',
  'Walrus',
  'Pretzel',
  'Comet',
  'Badger',
  'Mango',
  'Pelican',
  'Turnip',
  'Anchor',
  'Lantern',
  'Kettle',
  'Marble',
  'Nomad',
  'Pigeon',
  'Raven',
  'Squid',
  'Thimble',
  'Yak',
];
