/**
 * A Dockerfile read into its instructions, grouped by build stage, for tests that check what the image does without
 * building it. Handles what the Dockerfile syntax allows that matters here: comments, `\` line continuations,
 * case-insensitive keywords, `FROM image AS name`, and exec-form (JSON array) arguments.
 */

export interface Instruction {
  keyword: string;
  /** The arguments as written, continuations joined with a space. */
  args: string;
  line: number;
}

export interface Stage {
  /** The image it starts from, as written (`${BASE_IMAGE}`). */
  from: string;
  name: string | null;
  instructions: Instruction[];
}

export interface ParsedDockerfile {
  /** ARGs before the first FROM, with their defaults (the only ones a FROM line can use). */
  globalArgs: Map<string, string | null>;
  stages: Stage[];
}

export function parseDockerfile(text: string): ParsedDockerfile {
  const instructions: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!;
    if (/^\s*(#|$)/.test(line)) continue;
    // A trailing backslash continues the instruction; comment lines inside it are dropped, as Docker does.
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      line = line.replace(/\\\s*$/, ' ');
      i++;
      if (!/^\s*#/.test(lines[i]!)) line += lines[i]!.trim();
    }
    const match = /^\s*(\w+)\s+([\s\S]*)$/.exec(line);
    if (!match) throw new Error(`Dockerfile line ${start + 1}: cannot read "${line}"`);
    instructions.push({ keyword: match[1]!.toUpperCase(), args: match[2]!.replace(/\s+/g, ' ').trim(), line: start + 1 });
  }

  const globalArgs = new Map<string, string | null>();
  const stages: Stage[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const [from, as, name] = instruction.args.split(' ');
      stages.push({ from: from!, name: as?.toUpperCase() === 'AS' ? name! : null, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword !== 'ARG') throw new Error(`Dockerfile line ${instruction.line}: ${instruction.keyword} before the first FROM`);
      const [name, value] = instruction.args.split('=');
      globalArgs.set(name!, value ?? null);
    } else {
      stages.at(-1)!.instructions.push(instruction);
    }
  }
  return { globalArgs, stages };
}

/** The instructions of one kind in a stage. */
export function instructionsOf(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

/** An exec-form argument (`["node", "dist/cli.js"]`) as its array; null for the shell form. */
export function execForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  return JSON.parse(args) as string[];
}

/** `KEY=value KEY2=value2` (ENV, LABEL) as a map; values may be double-quoted. */
export function keyValues(args: string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const [, key, quoted, plain] of args.matchAll(/([A-Za-z_][A-Za-z0-9_.-]*)=(?:"([^"]*)"|(\S*))/g)) pairs.set(key!, quoted ?? plain ?? '');
  return pairs;
}
