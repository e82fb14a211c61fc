// What citty 0.2 leaves to its caller: finding the command a command line names (to print its
// help and run it), refusing flags nobody declared (citty parses with `strict: false`), and
// repeatable flags (citty keeps the last value only, so a flag not declared repeatable is refused
// when given twice).
import type { ArgDef, ArgsDef, CommandDef, CommandMeta } from "citty";
import { didYouMeanText } from "../capability/did-you-mean.ts";

/** A command line a user can fix: exit 2 with the message and a pointer to `--help`. */
export class UsageError extends Error {
  /** False when `--help` would not help (another server already serves the checkout). */
  readonly pointToHelp: boolean;
  constructor(message: string, readonly command: string, options: { pointToHelp?: boolean } = {}) {
    super(message);
    this.name = "UsageError";
    this.pointToHelp = options.pointToHelp ?? true;
  }
}

/** docket's command metadata: citty's, plus examples that every `--help` shows. */
export interface DocketCommandMeta extends CommandMeta {
  examples?: string[];
  /** Short facts printed after the examples (exit codes, environment variables). */
  notes?: string[];
  /** The flags that may be given more than once (read with `repeatedFlag`); any other is refused when repeated. */
  repeatable?: readonly string[];
  /**
   * What the command still owes its caller when its command line is refused (exit 2), before the
   * message is printed: `docket run` records the refusal where a CI job reads a run's end.
   */
  onUsageError?(refused: RefusedCommandLine): Promise<void>;
}

/** A command line refused as a usage error, as the command's `onUsageError` gets it. */
export interface RefusedCommandLine {
  message: string;
  /** The tokens after the command's name. */
  tokens: string[];
  /** The command's declared arguments, to read what it can of `tokens`. */
  args: ArgsDef;
}

/** A command found by name, with its meta resolved. */
export interface ResolvedCommand {
  name: string;
  cmd: CommandDef<any>;
  meta: DocketCommandMeta;
}

type Resolvable<T> = T | Promise<T> | (() => T) | (() => Promise<T>);

async function resolved<T>(value: Resolvable<T> | undefined): Promise<T | undefined> {
  return typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;
}

/** `deadline-ms` and `deadlineMs` name the same flag, as citty parses them. */
function sameName(name: string, token: string): boolean {
  // As citty reads a flag: its name, or that name in camelCase (--result-file, --resultFile).
  // Nothing else: --Result-File or --result_file would pass here and then be ignored by citty.
  return token === name || token === name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

function findArg(args: ArgsDef, token: string): [string, ArgDef] | null {
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") continue;
    const aliases = (def as { alias?: string | string[] }).alias;
    const names = [name, ...(Array.isArray(aliases) ? aliases : aliases ? [aliases] : [])];
    if (names.some((n) => sameName(n, token))) return [name, def];
  }
  return null;
}

const takesValue = (def: ArgDef) => def.type === "string" || def.type === "enum";

/**
 * Follows the command line down the sub-commands it names: `capabilities show files.digest` →
 * [docket, capabilities, show] and the tokens left for `show`. Stops at the first token that
 * names no sub-command (the leaf's own argument, or a typo the caller reports).
 */
export async function resolveChain(root: CommandDef<any>, rawArgs: string[]): Promise<{ chain: ResolvedCommand[]; rest: string[] }> {
  const chain: ResolvedCommand[] = [{ name: "", cmd: root, meta: (await resolved(root.meta)) ?? {} }];
  chain[0]!.name = chain[0]!.meta.name ?? "docket";
  let rest = rawArgs;
  for (;;) {
    const current = chain.at(-1)!.cmd;
    const subCommands = await resolved(current.subCommands);
    if (!subCommands) break;
    const args = (await resolved(current.args)) ?? {};
    const at = firstPositional(rest, args);
    const name = at === -1 ? undefined : rest[at];
    if (name === undefined || !(name in subCommands)) break;
    const cmd = (await resolved(subCommands[name])) as CommandDef<any>;
    chain.push({ name, cmd, meta: (await resolved(cmd.meta)) ?? {} });
    rest = rest.slice(at + 1);
  }
  return { chain, rest };
}

/** The index of the first positional argument among `tokens` (a flag's value is not one), or -1. */
export function firstPositional(tokens: string[], args: ArgsDef): number {
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === "--") return -1;
    if (token.startsWith("-") && token !== "-") {
      const found = findArg(args, token.replace(/^--?/, "").split("=")[0]!);
      if (found && takesValue(found[1]) && !token.includes("=")) i++;
      continue;
    }
    return i;
  }
  return -1;
}

/** The full name of a command for messages and help: `docket capabilities show`. */
export function commandPath(chain: ResolvedCommand[]): string {
  return chain.map((c) => c.name).join(" ");
}

/** Options of `checkCommandLine`. */
export interface CheckCommandLineOptions {
  /** The flags that may be given more than once (DocketCommandMeta.repeatable). */
  repeatable?: readonly string[];
}

/**
 * Refuses what citty would silently accept: an undeclared flag (which would also swallow the
 * next token as a positional), a value flag without its value, more positionals than declared,
 * and a flag given twice that is not repeatable (citty keeps the last: `--run-id r1 --run-id r2`
 * would change a retry key without a word).
 */
export function checkCommandLine(args: ArgsDef, tokens: string[], command: string, options: CheckCommandLineOptions = {}): void {
  const positionals = Object.values(args).filter((d) => d.type === "positional").length;
  const repeatable = options.repeatable ?? [];
  const given = new Set<string>();
  let seen = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === "--") {
      seen += tokens.length - i - 1;
      break;
    }
    if (token.startsWith("-") && token !== "-" && !/^-\d/.test(token)) {
      const [flag, inline] = splitFlag(token);
      const negated = flag.startsWith("no-") ? findArg(args, flag.slice(3)) : null;
      const found = findArg(args, flag) ?? (negated && negated[1].type === "boolean" ? negated : null);
      if (!found) {
        const options = Object.entries(args).filter(([, def]) => def.type !== "positional").map(([name]) => `--${name}`);
        const close = didYouMeanText(`--${flag}`, [...options, "--help"]);
        throw new UsageError(`Unknown option ${token.split("=")[0]} for ${command}.${close ? ` ${close}` : ""}`, command);
      }
      if (given.has(found[0]) && !repeatable.includes(found[0])) {
        // Not the values: one may be a secret (an --input), and this line goes to a CI log.
        const others = repeatable.length === 0 ? "" : ` (of its options only ${repeatable.map((name) => `--${name}`).join(" and ")} repeat)`;
        // Named as typed (`--no-watch`); a switch holds no value to speak of.
        const typed = found === negated ? `--no-${found[0]}` : `--${found[0]}`;
        const holds = takesValue(found[1]) ? `; it takes one value${others}` : `; --${found[0]} and --no-${found[0]} are one switch${others}`;
        throw new UsageError(`Option ${typed} of ${command} is given more than once${holds}. Give it once.`, command);
      }
      given.add(found[0]);
      // A folder given empty (`--capabilities "$DIR"` with DIR unset) would name where docket runs.
      const value = inline ?? tokens[i + 1];
      if (found[0] === "capabilities" && value === "") throw new UsageError(`Option --capabilities of ${command} is given an empty folder (an unset variable?). Give the folder of your capability files.`, command);
      if (takesValue(found[1]) && inline === undefined) {
        const needs = `Option --${found[0]} of ${command} needs a value${found[1].valueHint ? ` (${found[1].valueHint})` : ""}`;
        if (i + 1 >= tokens.length) throw new UsageError(`${needs}.`, command);
        // `--run-id --deadline-ms 5000` would take "--deadline-ms" as the run id, and 5000 as a stray word.
        const next = tokens[i + 1]!;
        if (/^--[^-]/.test(next)) throw new UsageError(`${needs}, but the next word is the option ${next.split("=")[0]}. Give its value after it (a value that begins with -- as --${found[0]}=--…).`, command);
        i++;
      }
      continue;
    }
    seen++;
    if (seen > positionals) throw new UsageError(`Unexpected argument ${JSON.stringify(token)} for ${command}${positionals === 0 ? ", which takes none" : ""}.`, command);
  }
}

function splitFlag(token: string): [string, string | undefined] {
  const body = token.replace(/^--?/, "");
  const eq = body.indexOf("=");
  return eq === -1 ? [body, undefined] : [body.slice(0, eq), body.slice(eq + 1)];
}

/** Every value of a repeatable flag, in order: `--capabilities a --capabilities=b` → [a, b]. */
export function repeatedFlag(tokens: string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === "--") break;
    if (!token.startsWith("--")) continue;
    const [flag, inline] = splitFlag(token);
    if (!sameName(flag, name)) continue;
    if (inline !== undefined) values.push(inline);
    else if (i + 1 < tokens.length) values.push(tokens[++i]!);
  }
  return values;
}
