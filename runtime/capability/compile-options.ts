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
 * nothing (checking tester, session 47) — each word ending at a space or the comment's `*`.
 * Null when it sets none.
 */
export function jsxPragmasOf(text: string): JsxPragmas | null {
  if (!text.includes("@jsx")) return null;
  let found: JsxPragmas | null = null;
  for (const [comment] of text.matchAll(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g)) {
    for (const [, name, value] of comment.matchAll(/@(jsxImportSource|jsxRuntime|jsxFrag|jsx)[ \t]+([^\s*]+)/g)) {
      found ??= {};
      found[PRAGMA_FIELDS[name as keyof typeof PRAGMA_FIELDS]] ??= value!;
    }
  }
  return found;
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
