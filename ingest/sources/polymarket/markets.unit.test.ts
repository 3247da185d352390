import { describe, expect, it } from 'vitest';
import { marketMetadataSchema } from '../../contract/events.ts';
import {
  MarketCatalog,
  inferOutcomeNames,
  marketCategory,
  marketMetadata,
  marketWindow,
  versusSides,
} from './markets.ts';

const CONDITION = '0xe62f73808cec30539e027d4fb3d386951e41fd32489686cc5ab099eeb1cdb591';

describe('inferOutcomeNames', () => {
  it('keeps both names when rows named both', () => {
    expect(inferOutcomeNames('Oilers vs. Ducks', '', ['Oilers', 'Ducks'])).toEqual(['Oilers', 'Ducks']);
  });

  it.each([
    [
      ['Up', undefined],
      ['Up', 'Down'],
    ],
    [
      [undefined, 'Down'],
      ['Up', 'Down'],
    ],
    [
      [undefined, 'No'],
      ['Yes', 'No'],
    ],
    [
      ['yes', undefined],
      ['yes', 'No'],
    ],
    [
      ['Over', undefined],
      ['Over', 'Under'],
    ],
    [
      [undefined, 'Under'],
      ['Over', 'Under'],
    ],
  ] as const)('completes a well-known pair %j', (names, expected) => {
    expect(inferOutcomeNames('Some market', '', names)).toEqual(expected);
  });

  it('completes the two teams of an "A vs. B" title', () => {
    expect(inferOutcomeNames('France vs. Spain: Team to Advance', '', [undefined, 'Spain'])).toEqual([
      'France',
      'Spain',
    ]);
    expect(
      inferOutcomeNames('St. Louis Cardinals vs. Arizona Diamondbacks', '', ['St. Louis Cardinals', undefined]),
    ).toEqual(['St. Louis Cardinals', 'Arizona Diamondbacks']);
    expect(
      inferOutcomeNames('Granby: Aleksandar Vukic vs Alexis Galarneau', '', ['Aleksandar Vukic', undefined]),
    ).toEqual(['Aleksandar Vukic', 'Alexis Galarneau']);
  });

  it('prefers the Yes/No pair in a question that names two teams', () => {
    expect(inferOutcomeNames('Will Argentina vs. Switzerland end in a draw?', '', [undefined, 'No'])).toEqual([
      'Yes',
      'No',
    ]);
  });

  it('uses a placeholder when nothing names the other side', () => {
    expect(inferOutcomeNames('Who wins the election?', '', ['Alice', undefined])).toEqual(['Alice', 'Not Alice']);
    expect(inferOutcomeNames('Who wins the election?', '', [undefined, 'Bob'])).toEqual(['Not Bob', 'Bob']);
  });

  it('reads both names from the title when no row named either (markets seen only through legs)', () => {
    expect(
      inferOutcomeNames('XRP Up or Down - January 4, 10:30PM-10:45PM ET', 'xrp-updown-15m-1767583800', [
        undefined,
        undefined,
      ]),
    ).toEqual(['Up', 'Down']);
    expect(inferOutcomeNames('Will France win on 2026-07-14?', '', [undefined, undefined])).toEqual(['Yes', 'No']);
    expect(inferOutcomeNames('Norway vs. England: Team to Advance', '', [undefined, undefined])).toEqual([
      'Norway',
      'England',
    ]);
    expect(inferOutcomeNames('Something', '', [undefined, undefined])).toEqual(['Outcome 1', 'Outcome 2']);
  });
});

describe('versusSides', () => {
  it('strips a league prefix and a suffix', () => {
    expect(versusSides('Pozoblanco: Akira Santillan vs Izan Almazan Valiente')).toEqual([
      'Akira Santillan',
      'Izan Almazan Valiente',
    ]);
    expect(versusSides('Lakers vs. Celtics (Game 7)')).toEqual(['Lakers', 'Celtics']);
    expect(versusSides('No match here')).toBeUndefined();
  });
});

describe('marketCategory', () => {
  it.each([
    ['Bitcoin Up or Down - January 4, 10PM ET', 'bitcoin-up-or-down-january-4-10pm-et', 'crypto'],
    ['', 'btc-updown-15m-1767583800', 'crypto'],
    ['Oilers vs. Ducks', 'nhl-edm-ana-2026-04-24', 'sports'],
    ['Granby: Aleksandar Vukic vs Alexis Galarneau', '', 'sports'],
    ['Will the US confirm that aliens exist by September 30?', '', 'other'],
    ['Canvas sales', 'canvas-sales', 'other'],
  ] as const)('%s → %s', (title, slug, category) => {
    expect(marketCategory(title, slug)).toBe(category);
  });
});

describe('marketWindow', () => {
  it('reads the window named in the title', () => {
    expect(
      marketWindow('Bitcoin Up or Down - January 4, 2:45PM-3:00PM ET', 'btc-updown-15m-1767555900', 1767556641),
    ).toEqual({
      startTs: 1767555900,
      endTs: 1767556800,
    });
    expect(marketWindow('Ethereum Up or Down - January 4, 10PM ET', '', 1767585279)).toEqual({
      startTs: 1767582000,
      endTs: 1767585600,
    });
  });

  it('falls back to the epoch in a short-window slug', () => {
    expect(marketWindow('Bitcoin Up or Down', 'btc-updown-15m-1767555900', 1767556641)).toEqual({
      startTs: 1767555900,
      endTs: 1767556800,
    });
    expect(marketWindow('Bitcoin Up or Down', 'btc-updown-5m-1767555900', 1767556641)).toEqual({
      startTs: 1767555900,
      endTs: 1767556200,
    });
  });

  it('is null when neither names a time', () => {
    expect(marketWindow('Will France win on 2026-07-14?', 'fifwc-fra', 1784064509)).toEqual({
      startTs: null,
      endTs: null,
    });
  });
});

describe('MarketCatalog and marketMetadata', () => {
  it('folds rows into one metadata event: first names, latest timestamp as version', () => {
    const catalog = new MarketCatalog();
    const base = { conditionId: CONDITION, title: '', slug: '', icon: '' };
    catalog.observe({ ...base, ts: 1767556000 });
    catalog.observe({
      ...base,
      title: 'Bitcoin Up or Down - January 4, 2:45PM-3:00PM ET',
      slug: 'btc-updown-15m-1767555900',
      ts: 1767556641,
      outcome: { tokenSide: 2, name: 'Down' },
    });
    catalog.observe({
      ...base,
      title: 'other title',
      icon: 'https://icon',
      ts: 1767556100,
      outcome: { tokenSide: 2, name: 'Other' },
    });
    const facts = catalog.facts(CONDITION);
    expect(facts).toBeDefined();
    const metadata = marketMetadata(facts!);
    expect(metadata).toEqual({
      type: 'metadata',
      condition_id: CONDITION,
      title: 'Bitcoin Up or Down - January 4, 2:45PM-3:00PM ET',
      slug: 'btc-updown-15m-1767555900',
      outcome1: 'Up',
      outcome2: 'Down',
      category: 'crypto',
      title_start_ts: 1767555900,
      end_ts: 1767556800,
      version: 1767556641,
      icon: 'https://icon',
    });
    expect(marketMetadataSchema.safeParse(metadata).success).toBe(true);
  });

  it('fits overlong and missing text to the contract', () => {
    const catalog = new MarketCatalog();
    catalog.observe({
      conditionId: CONDITION,
      title: '',
      slug: 's'.repeat(400),
      icon: `https://${'i'.repeat(3000)}`,
      ts: 1767556000,
      outcome: { tokenSide: 1, name: 'n'.repeat(300) },
    });
    const metadata = marketMetadata(catalog.facts(CONDITION)!);
    expect(marketMetadataSchema.safeParse(metadata).success).toBe(true);
    expect(metadata.icon).toBe('');
    expect(metadata.title.length).toBeLessThanOrEqual(500);
  });
});
