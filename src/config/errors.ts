/** One problem in a config, located by its key path (`nodes[1].address`) and, for files, line:column. */
export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
}

/**
 * A config that cannot be used. Carries every problem found (not just the first), each on its own line
 * of `message` in the compiler style `source:line:column: path: problem`, so an editor can jump to it.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly issues: readonly ConfigIssue[];

  constructor(
    readonly source: string,
    issues: readonly ConfigIssue[],
  ) {
    super(issues.map((i) => formatIssue(source, i)).join('\n'));
    this.issues = issues;
  }

  /** The path of the first problem ('' for the document itself). */
  get path(): string {
    return this.issues[0]?.path ?? '';
  }
}

function formatIssue(source: string, issue: ConfigIssue): string {
  const where = issue.line === undefined ? source : `${source}:${issue.line}:${issue.column ?? 1}`;
  return issue.path === '' ? `${where}: ${issue.message}` : `${where}: ${issue.path}: ${issue.message}`;
}
