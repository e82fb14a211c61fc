// The folder a command was started in, as docket can name it. A path that is not valid UTF-8
// reaches JavaScript with U+FFFD in place of its bad bytes: that string names another folder
// (one that does not exist, or a sibling), and `docket init` made and filled it (a tester's
// finding). Such a folder is refused before anything is read or written, and so is such a path
// given as an argument (`--result-file`, `--capabilities`, `--input @file`, a file to run).
import { existsSync, statSync } from "node:fs";
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
 * that holds U+FFFD and names nothing that exists lost a byte that is not UTF-8 on its way in, and
 * would read or write another path than the one meant (a tester's `--result-file $'res\xff.json'`
 * wrote `res\uFFFD.json`). One that exists with that character in its name is used.
 */
export function unnamablePathArgument(args: readonly string[], cwd: string): string | null {
  const given: Array<[what: string, path: string]> = [];
  for (const [flag, pathOf] of PATH_FLAGS) {
    for (const value of repeatedFlag([...args], flag)) {
      const path = pathOf(value);
      if (path !== null) given.push([`--${flag}`, path]);
    }
  }
  // `docket run ./capabilities/x.ts`: a file to run.
  if (args[0] === "run" && args[1] !== undefined && !args[1].startsWith("-")) given.push(["docket run", args[1]]);
  for (const [what, path] of given) {
    if (!path.includes("\uFFFD") || existsSync(resolve(cwd, path))) continue;
    return `docket cannot use the path ${JSON.stringify(path)} given to ${what}: it is not valid UTF-8 (each \uFFFD stands for a byte that is not), so docket would read or write another path than the one meant. Give a path whose name is UTF-8 (rename the file or folder) and run again.`;
  }
  return null;
}
