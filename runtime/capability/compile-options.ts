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
