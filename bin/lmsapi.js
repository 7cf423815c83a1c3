#!/usr/bin/env node
// Runs the compiled CLI when it has been built (npm run build), otherwise the TypeScript source through tsx.
import { existsSync } from 'node:fs';
const compiled = new URL('../dist/cli.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  await import('tsx/esm');
  await import(new URL('../src/cli.ts', import.meta.url).href);
}
