// Rewrites the configuration table in README.md from src/config/options.ts (after `npm run build`).
import { readFileSync, writeFileSync } from 'node:fs';
import { optionsMarkdownTable } from '../dist/src/config/options.js';

const path = new URL('../README.md', import.meta.url);
const text = readFileSync(path, 'utf8');
const begin = '<!-- options:begin -->';
const end = '<!-- options:end -->';
const a = text.indexOf(begin);
const b = text.indexOf(end);
if (a === -1 || b === -1) throw new Error('README.md lacks the options markers');
writeFileSync(path, `${text.slice(0, a + begin.length)}\n${optionsMarkdownTable()}\n${text.slice(b)}`);
