// Imports of a local module that docket cannot pin (capability-sources.ts): what they would load is
// read from disk when the code runs, not the text docket read and tried, and it is neither in the
// capability's version nor watched. Such a capability is a load error naming the import
// (docs/containment.md, "Loading").

import { skeleton } from "./_specifier-rewrite.ts";

/** One import docket cannot pin, as written (bounded), and its line. */
export interface UnpinnableImport {
  /** `computed`: `import(…)` or `require(…)` of a name computed at run time; `created-require`: a call of a require made by `createRequire`. */
  kind: "computed" | "created-require";
  written: string;
  line: number;
}

/** The first import of a local module in `text` that docket cannot pin, or null. */
export function unpinnableImport(text: string): UnpinnableImport | null {
  return computedLocalImport(text) ?? createdRequireOfLocal(text);
}

/** Text that may import a local module by a computed name: an import or require beside a local path or import.meta. */
const MAY_COMPUTE_IMPORT = /(?:import|require)\s*\(/;
// `"#lib/"`: a package.json "imports" name, which the runtime resolves without asking the module
// plugin, so no check at run time sees it.
const LOCAL_HINT = /["'`](?:\.\.?\/|#)|import\.meta|__dirname|__filename|process\.cwd\(\)/;
/** `import(` or `require(` as a call of its own, not a method (`.import(`) nor part of a name; or `import.meta.require(`. */
const IMPORT_CALL = /(?<![.\w$])(?:import|require|import\s*\.\s*meta\s*\.\s*require)\s*\(/g;

/**
 * The first argument of an `import(…)` or `require(…)` that names a local module by a name
 * computed at run time, or null. Computed: anything but one plain literal (a template with a
 * substitution, a concatenation, `.concat`, `.join`, `new URL(…)`), with a local path (`"./…"`,
 * `` `../…` ``) or `import.meta` in it. A name held in a variable alone cannot be told from a
 * package's, and is not reported. Comments, strings and regular expressions are read as such: an
 * import written in one of them is no import.
 */
function computedLocalImport(text: string): UnpinnableImport | null {
  if (!MAY_COMPUTE_IMPORT.test(text) || !LOCAL_HINT.test(text)) return null;
  const code = skeleton(text);
  for (const match of code.matchAll(IMPORT_CALL)) {
    const start = match.index! + match[0].length;
    const end = firstArgumentEnd(code, start);
    const written = text.slice(start, end).trim();
    const shape = code.slice(start, end).trim();
    const literal = /^(["'`])_*\1$/.test(shape) && !written.includes("${");
    // `import.meta.require("#lib/x")`: a package.json "imports" name no runtime check sees, read by
    // no scan as an import (a literal `import()` or `require()` of one is pinned like a path).
    if (literal && /meta/.test(match[0]) && /^["'`]#/.test(written)) return { kind: "computed", written: bounded(written), line: lineAt(text, start) };
    // One literal with no substitution is a plain import, rewritten and pinned like the others.
    if (literal) continue;
    // A JSON file named at run time is data the runtime reads as it finds it, unpinned (docs/containment.md).
    if (/\.json["'`)]/.test(written)) continue;
    if (LOCAL_HINT.test(written)) return { kind: "computed", written: bounded(written), line: lineAt(text, start) };
  }
  return null;
}

/**
 * The first call of a require made by `createRequire` (node:module) whose argument names a local
 * module, or null: `createRequire(import.meta.url)("../lib/x.cjs")`, or `req("./x.ts")` after
 * `const req = createRequire(…)`. The runtime reads no such call as an import, so docket would
 * neither read nor pin what it loads. A made require bound to the name `require` is read as
 * `require()` and pinned like one; one of a package's name loads the package, as an import would.
 */
function createdRequireOfLocal(text: string): UnpinnableImport | null {
  if (!text.includes("createRequire")) return null;
  const code = skeleton(text);
  // `import { createRequire as makeRequire }`, `const { createRequire: makeRequire } = module`.
  const makers = new Set(["createRequire"]);
  for (const match of code.matchAll(/\bcreateRequire(?:\s+as\s+|\s*:\s*)([\w$]+)/g)) makers.add(match[1]!);
  const made = new Set<string>();
  const argumentsAt: number[] = [];
  const makerCall = new RegExp(`(?<![\\w$])(?:${[...makers].map((name) => name.replace(/\$/g, "\\$")).join("|")})\\s*\\(`, "g");
  for (const match of code.matchAll(makerCall)) {
    const close = firstArgumentEnd(code, match.index! + match[0].length, true);
    const calledAtOnce = /^\s*\(/.exec(code.slice(close + 1));
    if (calledAtOnce) {
      argumentsAt.push(close + 1 + calledAtOnce[0].length);
      continue;
    }
    // `const req = createRequire(…)`, `req = module.createRequire(…)`.
    const bound = /([\w$]+)\s*=\s*(?:[\w$]+\s*\??\.\s*)*$/.exec(code.slice(Math.max(0, match.index! - 200), match.index!));
    if (bound && bound[1] !== "require") made.add(bound[1]!);
  }
  for (const name of made) {
    for (const match of code.matchAll(new RegExp(`(?<![.\\w$])${name.replace(/\$/g, "\\$")}\\s*\\(`, "g"))) argumentsAt.push(match.index! + match[0].length);
  }
  for (const start of argumentsAt.sort((a, b) => a - b)) {
    const written = text.slice(start, firstArgumentEnd(code, start)).trim();
    const literal = /^(["'`])(?:\.{0,2}\/|file:|#)/.test(written) && !written.includes("/node_modules/");
    if (literal || LOCAL_HINT.test(written)) return { kind: "created-require", written: bounded(written), line: lineAt(text, start) };
  }
  return null;
}

/**
 * Where the first argument starting at `from` ends: a comma or `)` outside brackets; with
 * `whole`, where the argument list ends (its `)`).
 */
function firstArgumentEnd(code: string, from: number, whole = false): number {
  let depth = 0;
  for (let i = from; i < code.length; i++) {
    const c = code[i];
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      if (depth === 0) return i;
      depth--;
    } else if (c === "," && depth === 0 && !whole) return i;
  }
  return code.length;
}

function bounded(written: string): string {
  return written.length > 80 ? `${written.slice(0, 80)}…` : written;
}

function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return line;
}
