// Module hooks that let plain `node` (20+) run this repo's TypeScript without a build step, for tests that
// need a real child process (crash-child.ts). Type-strips each .ts file with the installed `typescript`
// (transpileModule: no type check — `tsc --noEmit` does that) and maps NodeNext-style './x.js' imports to
// './x.ts' when only the .ts source exists. Node 22.6+ could use --experimental-strip-types; Node 20 cannot.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    const isPath = /^(\.{1,2}\/|\/|file:)/.test(specifier); // not a package name
    if (err?.code === 'ERR_MODULE_NOT_FOUND' && isPath && specifier.endsWith('.js')) {
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
    throw err;
  }
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context);
  const fileName = fileURLToPath(url);
  const { outputText } = ts.transpileModule(await readFile(fileName, 'utf8'), {
    fileName,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, inlineSourceMap: true },
  });
  return { format: 'module', source: outputText, shortCircuit: true };
}
