import { describe, expect, it } from 'vitest';
import { CHART_FORMATS, CHART_FORMATS_OF, CHART_KINDS, CHART_THEMES, chartTemplate, fillChartTemplate } from './templates.ts';

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
          expect(content).toMatch(/<script type="application\/json" id="chart-data">(<!\[CDATA\[)?__DATA__(\]\]>)?<\/script>/);
          expect(content).toContain(`data-theme="${theme}"`);
          expect(content).not.toContain('%%');
          if (format === 'svg') expect(content!.startsWith('<?xml')).toBe(true);
          // Only the tape reaches out, and only to the configured host.
          const external = [...content!.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
          expect(external).toEqual(kind === 'market-tape' ? [`${HOST}/uPlot.min.css`, `${HOST}/uPlot.iife.min.js`] : []);
        }
      }
    }
    expect(chartTemplate('market-tape', 'svg', 'night', HOST)).toBeNull();
  });

  it('is the same string on every call (assembled once)', () => {
    expect(chartTemplate('market', 'html', 'night', HOST)).toBe(chartTemplate('market', 'html', 'night', HOST));
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
