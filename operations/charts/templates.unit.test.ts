import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CHART_APP_KINDS,
  CHART_CSP,
  CHART_FORMATS,
  CHART_FORMATS_OF,
  CHART_KINDS,
  CHART_THEMES,
  chartApp,
  chartTemplate,
  fillChartTemplate,
} from './templates.ts';

const HOST = 'https://scripts.example/uplot';

describe('chart templates', () => {
  it('every kind in its formats and both themes holds __DATA__ exactly once, in the JSON block', () => {
    for (const kind of CHART_KINDS) {
      for (const format of CHART_FORMATS) {
        for (const theme of CHART_THEMES) {
          const content = chartTemplate(kind, format, theme, HOST);
          if (!CHART_FORMATS_OF[kind].includes(format)) {
            expect(content, `${kind}.${format}`).toBeNull();
            continue;
          }
          expect(content!.split('__DATA__')).toHaveLength(2);
          expect(content).toMatch(
            /<script type="application\/json" id="chart-data">(<!\[CDATA\[)?__DATA__(\]\]>)?<\/script>/,
          );
          expect(content).toContain(`data-theme="${theme}"`);
          expect(content).not.toContain('%%');
          if (format === 'svg') expect(content!.startsWith('<?xml')).toBe(true);
          // Only the tape reaches out, and only to the configured host.
          const external = [...content!.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
          expect(external).toEqual(
            kind === 'market-tape' ? [`${HOST}/uPlot.min.css`, `${HOST}/uPlot.iife.min.js`] : [],
          );
        }
      }
    }
    expect(chartTemplate('market-tape', 'svg', 'night', HOST)).toBeNull();
  });

  it('is the same string on every call (assembled once)', () => {
    expect(chartTemplate('market', 'html', 'night', HOST)).toBe(chartTemplate('market', 'html', 'night', HOST));
  });

  it('the MCP App documents: the html template with its chart script unchanged but deferred, no __DATA__, the CSP as a meta tag, no reference out', () => {
    expect(CHART_APP_KINDS).toEqual(['market', 'equity']);
    for (const kind of CHART_APP_KINDS) {
      const app = chartApp(kind);
      expect(app.startsWith('<!doctype html>')).toBe(true);
      expect(app).not.toContain('__DATA__');
      expect(app).not.toContain('%%');
      expect(app).toMatch(/<script type="application\/json" id="chart-data">null<\/script>/);
      expect(app).toContain(`<meta http-equiv="Content-Security-Policy" content="${CHART_CSP}">`);
      expect(app).toContain('data-theme="night"');
      expect([...app.matchAll(/\b(?:src|href)=/g)]).toEqual([]);
      // The template's own scripts, verbatim: the chart runs when the tool result has filled #chart-data.
      for (const file of ['common.js', `${kind}.js`, 'app.js'])
        expect(app).toContain(readFileSync(new URL(`./${file}`, import.meta.url), 'utf8'));
      expect(app.indexOf('window.__drawChart = function () {')).toBeLessThan(
        app.indexOf(readFileSync(new URL(`./${kind}.js`, import.meta.url), 'utf8')),
      );
      expect(app).toContain(`var APP_KIND = "${kind}";`);
      expect(chartApp(kind)).toBe(app);
    }
  });

  it('fills the JSON so that no value can close the script block or the CDATA section', () => {
    const data = { market: { title: 'A </script><script>alert(1)</script> ]]> & <b>' } };
    for (const format of ['html', 'svg'] as const) {
      const filled = fillChartTemplate(chartTemplate('market', format, 'night', HOST)!, data);
      const block = filled.match(/id="chart-data">(?:<!\[CDATA\[)?([\s\S]*?)(?:\]\]>)?<\/script>/)![1]!;
      expect(block).not.toMatch(/[<>&]/);
      expect(JSON.parse(block)).toEqual(data);
      expect(filled).not.toContain('__DATA__');
    }
  });
});
