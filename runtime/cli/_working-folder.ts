// The folder a command was started in, as docket can name it. A path that is not valid UTF-8
// reaches JavaScript with U+FFFD in place of its bad bytes: that string names another folder
// (one that does not exist, or a sibling), and `docket init` made and filled it (a tester's
// finding). Such a folder is refused before anything is read or written, and so is such a path
// given as an argument (`--result-file`, `--capabilities`, `--input @file`, a file to run).
import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { repeatedFlag } from "./_command-line.ts";

/** Why docket cannot work in `cwd` (the process's working folder), or null when it can. */
export function unnamableWorkingFolder(cwd: string): string | null {
  if (!cwd.includes("\uFFFD") || sameFolder(cwd, ".")) return null;
  return `docket cannot work in ${cwd}: the folder's path is not valid UTF-8 (each \uFFFD stands for a byte that is not), so docket would read and write another folder than this one. Rename the folder (or the parent whose name holds the byte) to a UTF-8 name and run again.`;
}

function sameFolder(a: string, b: string): boolean {
  try {
    const [one, two] = [statSync(a), statSync(b)];
    return one.dev === two.dev && one.ino === two.ino;
  } catch {
    return false;
  }
}

/** The flags whose value is a path, and how the path is read from it. */
const PATH_FLAGS: Array<[flag: string, path: (value: string) => string | null]> = [
  ["result-file", (value) => value],
  ["capabilities", (value) => value],
  ["input", (value) => (value.startsWith("@") ? value.slice(1) : null)],
];

/**
 * Why docket cannot use a path given on the command line `args` (run in `cwd`), or null: a path
 * with a byte that is not UTF-8 reaches JavaScript with U+FFFD in its place, and would read or
 * write another path than the one meant (a tester's `--result-file $'res\xff.json'` wrote
 * `res\uFFFD.json`, and one with `in\uFFFD.json` beside it read that file). The command line's
 * own bytes say which arguments lost a byte (Linux: /proc/self/cmdline); where they cannot be
 * read, a path holding U+FFFD that names nothing is taken for one.
 */
export function unnamablePathArgument(args: readonly string[], cwd: string, lossyOf: () => ReadonlySet<string> | null = lossyArguments): string | null {
  const given: Array<[what: string, path: string, arg: string]> = [];
  for (const [flag, pathOf] of PATH_FLAGS) {
    for (const value of repeatedFlag([...args], flag)) {
      const path = pathOf(value);
      if (path !== null) given.push([`--${flag}`, path, value]);
    }
  }
  // `docket run ./capabilities/x.ts`: a file to run.
  if (args[0] === "run" && args[1] !== undefined && !args[1].startsWith("-")) given.push(["docket run", args[1], args[1]]);
  // The command line is read only when a path holds U+FFFD: every other start costs nothing.
  let lossy: ReadonlySet<string> | null | undefined;
  for (const [what, path, arg] of given) {
    if (!path.includes("\uFFFD")) continue;
    if (lossy === undefined) lossy = lossyOf();
    // The argument as given, alone or as the value of `--flag=value`.
    const lost = lossy === null ? !existsSync(resolve(cwd, path)) : [...lossy].some((one) => one === arg || one.endsWith(`=${arg}`));
    if (!lost) continue;
    return `docket cannot use the path ${JSON.stringify(path)} given to ${what}: it is not valid UTF-8 (each \uFFFD stands for a byte that is not), so docket would read or write another path than the one meant. Give a path whose name is UTF-8 (rename the file or folder) and run again.`;
  }
  return null;
}

/** The arguments of this process that are not valid UTF-8, as JavaScript got them (U+FFFD for each bad byte); null where the command line cannot be read. */
function lossyArguments(): Set<string> | null {
  let raw: Buffer;
  try {
    raw = readFileSync("/proc/self/cmdline");
  } catch {
    return null;
  }
  const strict = new TextDecoder("utf-8", { fatal: true });
  const lossy = new Set<string>();
  for (let at = 0; at < raw.length; ) {
    let end = raw.indexOf(0, at);
    if (end === -1) end = raw.length;
    const bytes = raw.subarray(at, end);
    try {
      strict.decode(bytes);
    } catch {
      lossy.add(bytes.toString("utf8"));
    }
    at = end + 1;
  }
  return lossy;
}
