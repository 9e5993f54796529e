// Hand-made SVG line charts (no dependency): categorical x axis, linear y axis from 0.

export interface LineSeries {
  readonly name: string;
  /** One value per x label; null leaves a gap. */
  readonly values: ReadonlyArray<number | null>;
}

export interface LineChart {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly x: readonly string[];
  readonly series: readonly LineSeries[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function shortNumber(v: number): string {
  if (v >= 1e6) return `${+(v / 1e6).toFixed(2)}M`;
  if (v >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  return String(+v.toFixed(2));
}

export function lineChart(c: LineChart): string {
  const W = 640;
  const H = 380;
  const L = 70;
  const R = 150;
  const T = 40;
  const B = 55;
  const pw = W - L - R;
  const ph = H - T - B;
  const all = c.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const ymax = niceMax(Math.max(0, ...all));
  const xAt = (i: number): number => L + (c.x.length === 1 ? pw / 2 : (i * pw) / (c.x.length - 1));
  const yAt = (v: number): number => T + ph - (v / ymax) * ph;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${esc(c.title)}</text>`);
  for (let k = 0; k <= 5; k++) {
    const v = (ymax * k) / 5;
    const y = yAt(v);
    out.push(`<line x1="${L}" x2="${L + pw}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${L - 6}" y="${y + 4}" text-anchor="end">${shortNumber(v)}</text>`);
  }
  c.x.forEach((label, i) => {
    out.push(`<line x1="${xAt(i)}" x2="${xAt(i)}" y1="${T + ph}" y2="${T + ph + 5}" stroke="#333"/>`);
    out.push(`<text x="${xAt(i)}" y="${T + ph + 18}" text-anchor="middle">${esc(label)}</text>`);
  });
  out.push(`<line x1="${L}" x2="${L + pw}" y1="${T + ph}" y2="${T + ph}" stroke="#333"/>`);
  out.push(`<line x1="${L}" x2="${L}" y1="${T}" y2="${T + ph}" stroke="#333"/>`);
  out.push(`<text x="${L + pw / 2}" y="${H - 12}" text-anchor="middle">${esc(c.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${T + ph / 2}) rotate(-90)" text-anchor="middle">${esc(c.yLabel)}</text>`);
  c.series.forEach((s, si) => {
    const color = COLORS[si % COLORS.length]!;
    let d = '';
    let pen = false;
    s.values.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${xAt(i).toFixed(1)},${yAt(v).toFixed(1)} `;
      pen = true;
    });
    out.push(`<path d="${d.trim()}" fill="none" stroke="${color}" stroke-width="2"/>`);
    s.values.forEach((v, i) => {
      if (v !== null) out.push(`<circle cx="${xAt(i).toFixed(1)}" cy="${yAt(v).toFixed(1)}" r="3" fill="${color}"/>`);
    });
    const ly = T + 10 + si * 18;
    out.push(`<line x1="${L + pw + 12}" x2="${L + pw + 32}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"/>`);
    out.push(`<text x="${L + pw + 38}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
