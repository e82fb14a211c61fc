import { readFile } from "node:fs/promises";
import { resolve } from "node:path";

/** Where `--input` text comes from, injected so that tests need no real stdin. */
export interface InputSources {
  cwd: string;
  readStdin(): Promise<string>;
}

/** `--input` read and parsed, or the sentence that says what is wrong with it. */
export type ParsedInput = { ok: true; value: unknown } | { ok: false; message: string };

const EXAMPLE = `--input '{"path":"src"}', --input @input.json or --input - (read stdin)`;

/**
 * Reads `--input` in its three forms: inline JSON, `@path` (a file, relative to the working
 * directory) and `-` (stdin). Absent → `undefined`, so the capability's defaults apply.
 */
export async function readInput(flag: string | undefined, sources: InputSources): Promise<ParsedInput> {
  if (flag === undefined) return { ok: true, value: undefined };
  let text: string;
  let origin: string;
  if (flag === "-") {
    origin = "--input - (stdin)";
    text = await sources.readStdin();
  } else if (flag.startsWith("@")) {
    const path = resolve(sources.cwd, flag.slice(1));
    origin = `--input ${flag}`;
    try {
      text = await readFile(path, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === "ENOENT" ? "the file does not exist" : code === "EISDIR" ? "it is a folder" : (error as Error).message;
      return { ok: false, message: `Cannot read ${origin}: ${why} (${path}). Give a JSON file, e.g. ${EXAMPLE}.` };
    }
  } else {
    origin = "--input";
    text = flag;
  }
  return parseJson(text, origin);
}

function parseJson(text: string, origin: string): ParsedInput {
  if (text.trim() === "") return { ok: false, message: `${origin} is empty; give a JSON value, e.g. ${EXAMPLE}.` };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const reason = (error as Error).message.replace(/^JSON Parse error:\s*/, "");
    return { ok: false, message: `${origin} is not valid JSON (${reason}) in ${quote(text)}. Give a JSON value, e.g. ${EXAMPLE}.` };
  }
}

/** The offending text, bounded: enough to recognize, never a whole file in an error line. */
function quote(text: string): string {
  const flat = text.trim().replace(/\s+/g, " ");
  return JSON.stringify(flat.length > 80 ? `${flat.slice(0, 80)}…` : flat);
}

const INPUT_ENV = /^([A-Za-z_][A-Za-z0-9_.-]*)=([A-Za-z_][A-Za-z0-9_]*)$/;

/**
 * `--input-env field=VAR` (repeatable): the input's top-level `field` is the environment
 * variable's value, so a secret never stands on the command line (where `ps` shows it). Applied
 * over `--input`; a missing variable is a usage error that names it, and never prints a value.
 */
export function applyInputEnv(parsed: ParsedInput, pairs: string[], env: Record<string, string | undefined>): ParsedInput {
  if (!parsed.ok || pairs.length === 0) return parsed;
  const base = parsed.value === undefined ? {} : parsed.value;
  if (base === null || typeof base !== "object" || Array.isArray(base)) {
    return { ok: false, message: "--input-env fills fields of an object input, but --input is not a JSON object." };
  }
  const input: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const pair of pairs) {
    const match = INPUT_ENV.exec(pair);
    if (!match) return { ok: false, message: `--input-env takes field=VARIABLE, like --input-env token=GITHUB_TOKEN, got ${JSON.stringify(pair.slice(0, 80))}.` };
    const [, field, variable] = match;
    const value = env[variable!];
    if (value === undefined) return { ok: false, message: `--input-env ${field}=${variable}: the environment variable ${variable} is not set; set it, or give ${field} another way.` };
    input[field!] = value;
  }
  return { ok: true, value: input };
}
