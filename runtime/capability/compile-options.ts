// The compiler options of a checkout's tsconfig.json that change what a module's code does, not
// only how it is checked: docs/authoring.md, "TypeScript settings".
import { dirname } from "node:path";
import { extendsChain, nearestTsconfig } from "./alias-targets.ts";

/** The options of a tsconfig.json (its `extends` chain read as TypeScript reads it) that change what code runs. */
export interface CompileOptions {
  /** TypeScript's legacy decorators instead of the standard ones. */
  experimentalDecorators?: boolean;
  emitDecoratorMetadata?: boolean;
  /** `react` (classic: a factory call), `react-jsx`, `react-jsxdev` (automatic: an import). */
  jsx?: string;
  jsxFactory?: string;
  jsxFragmentFactory?: string;
  /** The package whose `jsx-runtime` the automatic JSX imports (`hono/jsx`, `preact`). */
  jsxImportSource?: string;
}

const KEYS = ["experimentalDecorators", "emitDecoratorMetadata", "jsx", "jsxFactory", "jsxFragmentFactory", "jsxImportSource"] as const;

/**
 * The compile options that govern `file`: those of the tsconfig.json nearest to it, each from the
 * first config of its `extends` chain that sets it. Empty when there is none, or it sets none.
 */
export function compileOptionsOf(file: string): CompileOptions {
  const config = nearestTsconfig(dirname(file));
  if (config === null) return {};
  const chain = extendsChain(config);
  const options: Record<string, unknown> = {};
  for (const key of KEYS) {
    const set = chain.find((link) => link.options[key] !== undefined);
    const value = set?.options[key];
    if (typeof value === "string" || typeof value === "boolean") options[key] = value;
  }
  return options as CompileOptions;
}

/** The JSX pragmas a module sets itself: `@jsxImportSource`, `@jsxRuntime`, `@jsx`, `@jsxFrag`. */
export interface JsxPragmas {
  importSource?: string;
  runtime?: string;
  factory?: string;
  fragment?: string;
}

const PRAGMA_FIELDS = { jsxImportSource: "importSource", jsxRuntime: "runtime", jsx: "factory", jsxFrag: "fragment" } as const;

/**
 * The JSX pragmas of a module's own comments (`/** @jsxImportSource preact *\/`), as TypeScript
 * and the runtime read them: in comments only — a string that mentions `@jsxImportSource` sets
 * nothing (checking testers, session 47) — each word ending at a space or the comment's `*`.
 * Null when it sets none.
 */
export function jsxPragmasOf(text: string): JsxPragmas | null {
  if (!text.includes("@jsx")) return null;
  let found: JsxPragmas | null = null;
  for (const comment of commentsOf(text)) {
    for (const [, name, value] of comment.matchAll(/@(jsxImportSource|jsxRuntime|jsxFrag|jsx)[ \t]+([^\s*]+)/g)) {
      found ??= {};
      found[PRAGMA_FIELDS[name as keyof typeof PRAGMA_FIELDS]] ??= value!;
    }
  }
  return found;
}

/**
 * The comments of a module's text, strings and template literals passed over (a URL in a string,
 * `"https://example.com/@jsx h"`, is no comment: second checking tester, session 47). A regular
 * expression literal is not told from a division: a `//` inside one starts a comment here.
 */
function* commentsOf(text: string): Generator<string> {
  // The braces open in each `${…}` of the templates we are in, innermost last: a `}` that closes
  // one goes back into its template (third checking tester: a backtick inside `${…}`).
  const substitutions: number[] = [];
  let at = 0;
  const template = () => {
    // From inside a template to its end, or into a `${`.
    while (at < text.length && text[at] !== "`") {
      if (text[at] === "\\") at += 2;
      else if (text[at] === "$" && text[at + 1] === "{") {
        at += 2;
        substitutions.push(0);
        return;
      } else at++;
    }
    at++;
  };
  while (at < text.length) {
    const unit = text[at]!;
    if (unit === "/" && (text[at + 1] === "/" || text[at + 1] === "*")) {
      const line = text[at + 1] === "/";
      const end = line ? text.indexOf("\n", at + 2) : text.indexOf("*/", at + 2);
      const stop = end < 0 ? text.length : line ? end : end + 2;
      yield text.slice(at, stop);
      at = stop;
    } else if (unit === '"' || unit === "'") {
      // To the closing quote, past escaped ones; a string ends at its line too.
      at++;
      while (at < text.length && text[at] !== unit && text[at] !== "\n") at += text[at] === "\\" ? 2 : 1;
      at++;
    } else if (unit === "`") {
      at++;
      template();
    } else if (substitutions.length > 0 && (unit === "{" || unit === "}")) {
      at++;
      if (unit === "{") substitutions[substitutions.length - 1]!++;
      else if (substitutions[substitutions.length - 1]! > 0) substitutions[substitutions.length - 1]!--;
      else {
        substitutions.pop();
        template();
      }
    } else {
      at++;
    }
  }
}

/**
 * The package whose JSX runtime a module's JSX imports (`preact/jsx-dev-runtime`), or null when its
 * JSX is classic (a factory call it imports itself): its own pragmas first, then its tsconfig.json's
 * options, then the runtime's default, `react`.
 */
export function jsxRuntimeSourceOf(text: string, options: CompileOptions): string | null {
  const own = jsxPragmasOf(text);
  const classic = own?.runtime !== undefined ? own.runtime === "classic" : options.jsx === "react";
  return classic ? null : (own?.importSource ?? options.jsxImportSource ?? "react");
}
