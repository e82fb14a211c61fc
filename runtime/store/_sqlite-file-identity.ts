import { statSync } from "node:fs";

/**
 * Whether the store's file is still the one opened: a checkout cleaned under a running server
 * (`git clean -fdX`, `rm -rf .docket`) unlinks it, and SQLite then writes on to a file no path
 * names, which a restart never finds — so an answer acknowledged after that would be lost. Answers
 * why the file is not the one opened (a write then fails as a storage fault: nothing more is
 * acknowledged), or null. One stat per write of the store.
 */
export function storeFileIdentity(path: string): () => string | null {
  const opened = statSync(path);
  return () => {
    let now;
    try {
      now = statSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" && (error as NodeJS.ErrnoException).code !== "ENOTDIR") return null;
      now = null;
    }
    if (now !== null && now.ino === opened.ino && now.dev === opened.dev) return null;
    return `${path} was ${now === null ? "removed" : "replaced by another file"} while this server ran (a git clean -fdX, or .docket/ deleted?): what the store writes now could never be read again, so it admits nothing new. Restart docket serve: it starts a new store there (the executions this one held are lost with the file)`;
  };
}
