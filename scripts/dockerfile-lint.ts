// A small Dockerfile checker (no container engine or hadolint on these machines): parses instructions and
// applies the rules the image must keep — hadolint's usual ones plus ours (non-root, HEALTHCHECK, /data,
// nothing of the tests, the test faults or the dev dependencies in the runtime stage). Used by
// test/integration/image.test.ts and test/unit/server/test-faults-boundary.test.ts.

export interface Instruction {
  op: string;
  args: string;
  line: number;
}

export interface Stage {
  from: string;
  name: string | null;
  instructions: Instruction[];
}

/** Instructions with `\` continuations joined and comments dropped, grouped into stages. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let l = lines[i]!.trim();
    if (l === '' || l.startsWith('#')) continue;
    while (l.endsWith('\\') && i + 1 < lines.length) {
      const next = lines[++i]!.trim();
      l = l.slice(0, -1).trimEnd() + (next.startsWith('#') ? '' : ' ' + next);
    }
    const m = /^(\w+)\s+(.*)$/s.exec(l);
    if (!m) continue;
    const ins: Instruction = { op: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start + 1 };
    if (ins.op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      stages.push({ from: f?.[1] ?? ins.args, name: f?.[2] ?? null, instructions: [] });
    } else if (stages.length > 0) stages[stages.length - 1]!.instructions.push(ins);
  }
  return stages;
}

const isJsonArray = (s: string) => {
  try {
    return Array.isArray(JSON.parse(s));
  } catch {
    return false;
  }
};

/** Every rule the Dockerfile breaks, as `line N: message` (empty when it keeps them all). */
export function lintDockerfile(text: string, exists: (path: string) => boolean = () => true): string[] {
  const problems: string[] = [];
  const bad = (ins: Instruction | null, msg: string) => problems.push(`${ins ? `line ${ins.line}: ` : ''}${msg}`);
  const stages = parseDockerfile(text);
  if (stages.length < 2) bad(null, 'expected a build stage and a runtime stage');
  for (const st of stages) {
    if (!/:[\w.-]+$/.test(st.from) || st.from.endsWith(':latest')) bad(null, `FROM ${st.from}: pin a tag (not latest) (DL3006/DL3007)`);
    for (const ins of st.instructions) {
      if (ins.op === 'WORKDIR' && !ins.args.startsWith('/')) bad(ins, 'WORKDIR must be absolute (DL3000)');
      if (ins.op === 'RUN') {
        if (/\bsudo\b/.test(ins.args)) bad(ins, 'do not use sudo (DL3004)');
        if (/(^|&&|;)\s*cd\s/.test(ins.args)) bad(ins, 'use WORKDIR instead of cd (DL3003)');
        if (/apt-get install/.test(ins.args)) {
          if (!/--no-install-recommends/.test(ins.args)) bad(ins, 'apt-get install without --no-install-recommends (DL3015)');
          if (!/rm -rf \/var\/lib\/apt\/lists/.test(ins.args)) bad(ins, 'delete the apt lists after installing (DL3009)');
          if (!/-y\b/.test(ins.args)) bad(ins, 'apt-get install needs -y (DL3014)');
        }
        if (/\bapt-get upgrade\b|\bdist-upgrade\b/.test(ins.args)) bad(ins, 'no apt-get upgrade (DL3005)');
      }
      if (['CMD', 'ENTRYPOINT'].includes(ins.op) && !isJsonArray(ins.args)) bad(ins, `${ins.op} in exec (JSON) form (DL3025)`);
      if (ins.op === 'COPY' && !/--from=/.test(ins.args)) {
        const parts = ins.args.split(/\s+/).filter((p) => !p.startsWith('--'));
        for (const src of parts.slice(0, -1)) if (!exists(src)) bad(ins, `COPY ${src}: not in the build context`);
      }
      if (ins.op === 'ADD') bad(ins, 'use COPY instead of ADD (DL3020)');
    }
  }
  const build = stages[0];
  const runtime = stages[stages.length - 1];
  if (build && runtime && build !== runtime) {
    const buildRuns = build.instructions
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join('\n');
    for (const tool of ['python3', 'make', 'g++'])
      if (!new RegExp(`apt-get install[^\\n]*\\s${tool.replace('+', '\\+')}(\\s|$)`).test(buildRuns))
        bad(null, `build stage: install ${tool} for native modules`);
    if (!/npm ci\b/.test(buildRuns)) bad(null, 'build stage: install with npm ci (the lock file)');
    if (!/npm prune --omit=dev/.test(buildRuns))
      bad(null, 'build stage: npm prune --omit=dev before node_modules is copied to the runtime stage');
    // The test faults are test-only code that tsc builds with the rest of src/; the package's `files` leave
    // them out, and the image, which copies dist/ whole, must too.
    if (!/(^|&&|;)\s*rm -rf (\/app\/)?dist\/src\/test-faults(\s|$)/m.test(buildRuns))
      bad(null, 'build stage: rm -rf dist/src/test-faults before dist is copied to the runtime stage (test-only code)');
    const ins = runtime.instructions;
    const user = ins.filter((i) => i.op === 'USER').pop();
    if (!user || /^(root|0)(:|$)/.test(user.args)) bad(user ?? null, 'runtime stage: run as a non-root USER');
    const health = ins.find((i) => i.op === 'HEALTHCHECK');
    if (!health) bad(null, 'runtime stage: a HEALTHCHECK is required');
    else if (!/CMD \[.*"health"/.test(health.args)) bad(health, 'HEALTHCHECK must ask grpc health (leasehold health) in exec form');
    if (!ins.some((i) => i.op === 'VOLUME' && /"\/data"/.test(i.args))) bad(null, 'runtime stage: VOLUME ["/data"]');
    if (!ins.some((i) => i.op === 'ENV' && /LEASEHOLD_DATA_DIR=\/data\b/.test(i.args)))
      bad(null, 'runtime stage: ENV LEASEHOLD_DATA_DIR=/data (data under the volume by default)');
    for (const i of ins) {
      if (i.op === 'COPY' && /(^|\s)(\.\/)?(test|scripts|src|examples)(\/|\s|$)|\/app\/(test|build|src)\b/.test(i.args))
        bad(i, `runtime stage: no tests, scripts or sources (${i.args})`);
      if (i.op === 'RUN' && /npm (ci|install)\b/.test(i.args) && !/--omit=dev/.test(i.args))
        bad(i, 'runtime stage: npm install without --omit=dev brings dev dependencies');
    }
  }
  return problems;
}
