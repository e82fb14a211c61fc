// The folder a command was started in, as docket can name it. A path that is not valid UTF-8
// reaches JavaScript with U+FFFD in place of its bad bytes: that string names another folder
// (one that does not exist, or a sibling), and `docket init` made and filled it (a tester's
// finding). Such a folder is refused before anything is read or written.
import { statSync } from "node:fs";

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
