// YAML in, validated ClusterConfig out. The YAML layer only parses and locates; validate.ts decides.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type Document, isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, stringify } from 'yaml';
import { ConfigError } from './errors.js';
import type { ClusterConfig, NodeConfig } from './types.js';
import { type PathSegment, type Position, validateConfig } from './validate.js';

export interface ParseOptions {
  /** Directory that relative dataDir paths resolve against. Default: the directory of `sourceName`. */
  baseDir?: string;
}

/** Where a key path sits in the document: the key's position, or the nearest enclosing one that exists. */
function locator(doc: Document, lines: LineCounter): (path: readonly PathSegment[]) => Position | undefined {
  return (path) => {
    let node: unknown = doc.contents;
    let offset: number | undefined = (doc.contents as { range?: [number, number, number] } | null)?.range?.[0];
    for (const seg of path) {
      if (isAlias(node)) node = node.resolve(doc);
      if (isMap(node)) {
        const pair = node.items.find((p) => String(isScalar(p.key) ? p.key.value : p.key) === String(seg));
        if (!pair) break;
        offset = (pair.key as { range?: [number, number, number] }).range?.[0] ?? offset;
        node = pair.value;
      } else if (isSeq(node) && typeof seg === 'number' && node.items[seg] !== undefined) {
        node = node.items[seg];
        offset = (node as { range?: [number, number, number] }).range?.[0] ?? offset;
      } else {
        break;
      }
    }
    if (offset === undefined) return undefined;
    const { line, col } = lines.linePos(offset);
    return { line, column: col };
  };
}

/**
 * Parses and validates a cluster config. `sourceName` names it in error messages (usually the file path)
 * and, unless options.baseDir is given, its directory is where relative dataDir paths resolve.
 * Throws ConfigError listing every problem.
 */
export function parseConfig(text: string, sourceName: string, options: ParseOptions = {}): ClusterConfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      sourceName,
      doc.errors.map((e) => {
        const { line, col } = lines.linePos(e.pos[0]);
        const message = e.code === 'DUPLICATE_KEY' ? 'duplicate key (each key may appear once per mapping)' : `invalid YAML: ${e.message}`;
        return { path: '', message, line, column: col };
      }),
    );
  }
  const baseDir = options.baseDir ?? dirname(resolve(sourceName));
  return validateConfig(doc.toJS(), { source: sourceName, baseDir, locate: locator(doc, lines) });
}

/** Reads and validates a YAML config file; relative dataDir paths resolve against the file's directory. */
export function loadConfig(path: string): ClusterConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'is a directory'
            : (err as Error).message;
    throw new ConfigError(path, [{ path: '', message: `cannot read the config file: ${why}` }]);
  }
  return parseConfig(text, path);
}

/** The node with this id, or a ConfigError naming the ids the config does have (for `serve --id`). */
export function findNode(config: ClusterConfig, id: string): NodeConfig {
  const node = config.nodes.find((n) => n.id === id);
  if (node) return node;
  throw new ConfigError(config.source, [
    { path: 'nodes', message: `no node with id ${JSON.stringify(id)} (the config has ${config.nodes.map((n) => n.id).join(', ')})` },
  ]);
}

/** The config as YAML that parseConfig reads back to an equal config (every key written out explicitly). */
export function stringifyConfig(config: ClusterConfig): string {
  const { nodes, raft, lock, limits, log, metrics, tls, auth } = config;
  return stringify({
    nodes: nodes.map((n) => ({ ...n })),
    raft,
    lock,
    limits,
    log,
    metrics,
    ...(tls ? { tls } : {}),
    ...(auth.ownerBinding ? { auth } : {}),
  });
}
