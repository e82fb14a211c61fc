import { basename } from "node:path";

/**
 * The shape of a capability id: lower-case dotted, `namespace.verb`, at least two segments; a `-`
 * or `_` inside a segment is fine (`repo.lint-check`, `files.digest_all`). See docs/handler-api.md.
 */
export const CAPABILITY_ID_PATTERN = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$/;

/** True when `value` has the shape of a capability id; every surface checks it before a look-up. */
export function isCapabilityId(value: unknown): boolean {
  return typeof value === "string" && CAPABILITY_ID_PATTERN.test(value);
}

/** The id a capability file is named after: its name without its extension (`team.deploy.ts` → `team.deploy`). */
export function idNamedBy(file: string): string {
  return basename(file).replace(/\.[^.]+$/, "");
}

/**
 * The longest capability id: its MCP tool is named after it (dots as underscores), and MCP
 * clients take tool names of 1–64 characters — some refuse every tool of a server that offers a
 * longer one (foundation tester, session 48: a 242-character id loaded).
 */
export const MAX_CAPABILITY_ID_LENGTH = 64;

/** What to tell a user whose id does not have the shape. */
export const CAPABILITY_ID_RULE = "namespace.verb, at least two parts, each a lower-case letter followed by lower-case letters, digits, _ or -";

/**
 * What to add when an id that is not one holds a character beyond ASCII: a Cyrillic `е` or a Greek
 * `ο` looks like the Latin letter, and the rule alone sent a user hunting for what was wrong
 * (foundation tester, session 44). Empty when it holds none.
 */
export function nonAsciiNote(id: string): string {
  for (const char of id) {
    const code = char.codePointAt(0)!;
    if (code > 0x7e) return ` It holds ${JSON.stringify(char)} (U+${code.toString(16).toUpperCase().padStart(4, "0")}), which is not an ASCII character, though it may look like one: type that letter again.`;
  }
  return "";
}

/**
 * Why no capability can have this id, though it has the shape of one, and what to name it instead:
 * its file would be named `<id>.ts`, and discovery skips `*.test.ts`, `*.spec.ts` (tests beside
 * the capabilities) and `*.d.ts` (declarations). Null for any other id. `docket new repo.test`
 * wrote a file that never loaded, and `docket run repo.test` then said only "not loaded"
 * (authoring tester, session 49).
 */
export function skippedIdReason(id: string): string | null {
  const last = /\.(test|spec|d)$/.exec(id)?.[1];
  if (last === undefined) return null;
  const stem = id.slice(0, -last.length - 1);
  const skipped = last === "d" ? "declaration files" : "tests beside the capabilities, which a test runner imports";
  const instead = last === "d" ? `${stem}.data` : `${stem}.${last}s or ${stem}.run-tests`;
  return `a capability's id cannot end in .${last}: its file would be ${id}.ts, and docket skips *.${last}.ts files (${skipped}); choose another last part, like ${instead}`;
}
