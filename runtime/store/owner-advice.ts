import { lstatSync, readFileSync, type Stats } from "node:fs";
import { dirname } from "node:path";

/**
 * Why this user may not write `path` when it (or, missing, its folder) belongs to another user —
 * a server run there once as root, a CI job as another user — with the ways out; null when it is
 * this user's own. The runtime's EACCES names neither whose it is nor who asks.
 */
export function ownerAdvice(path: string): string | null {
  const target = statOrUndefined(path);
  const [where, stats] = target !== undefined ? [path, target] : [dirname(path), statOrUndefined(dirname(path))];
  const me = process.getuid?.();
  if (stats === undefined || me === undefined || stats.uid === me) return null;
  const owner = userName(stats.uid);
  const folder = stats.isDirectory() ? where : dirname(where);
  return `${where} belongs to ${owner === null ? `user ${stats.uid}` : `${owner} (uid ${stats.uid})`}, not to this user (${nameOf(me)}): run docket as that user, or give the folder to this one (sudo chown -R ${me} ${folder})`;
}

/**
 * ownerAdvice of the first of `files` that exists and is another user's, else of `folder`; null
 * when all are this user's (a store's file and its companions, then their folder).
 */
export function firstOwnerAdvice(files: string[], folder: string): string | null {
  for (const file of files) {
    if (statOrUndefined(file) === undefined) continue;
    const advice = ownerAdvice(file);
    if (advice !== null) return advice;
  }
  return ownerAdvice(folder);
}

/** A folder this user may not search hides its files' stat too. */
function statOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

function nameOf(uid: number): string {
  const name = userName(uid);
  return name === null ? `uid ${uid}` : `${name}, uid ${uid}`;
}

/** The name of user `uid` from /etc/passwd, or null. */
function userName(uid: number): string | null {
  try {
    const line = readFileSync("/etc/passwd", "utf8").split("\n").find((entry) => entry.split(":")[2] === String(uid));
    return line?.split(":")[0] || null;
  } catch {
    return null;
  }
}
