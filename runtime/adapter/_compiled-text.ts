// A module's text as the runtime is to compile it under its checkout's tsconfig.json (docs/authoring.md,
// "TypeScript settings"). The binary's runtime applies no tsconfig.json compile option to the
// modules it compiles at run time (its JSX source, its decorators): `bun run` does, and a team's
// code written for one must run the same under the other (hostile tester, session 38).
import { jsxPragmasOf, type CompileOptions } from "../capability/compile-options.ts";

type Loader = "ts" | "tsx" | "jsx" | "js";

/**
 * What to hand the runtime for `text` (served with `loader`) under `options`:
 * - `experimentalDecorators`: a `.ts` or `.tsx` module that uses a decorator is compiled here
 *   with TypeScript's legacy decorators (and its JSX as the options say), and handed over as
 *   JavaScript; the compiled text's lines are not the file's, so an error in it names a line of
 *   the compiled text.
 * - Otherwise JSX options become the pragma comment TypeScript and the runtime read in the file
 *   itself, put in front of its first line (after a `#!` line), on the same line, so that every
 *   line keeps its number (that line's columns move by the comment's length). A file that has a
 *   JSX pragma of its own keeps it alone.
 */
export function compiledText(text: string, loader: Loader, options: CompileOptions): { contents: string; loader: Loader } {
  if ((loader === "ts" || loader === "tsx") && options.experimentalDecorators === true && /@[A-Za-z_$]/.test(text)) {
    return { contents: withLegacyDecorators(text, loader, options), loader: "js" };
  }
  // A pragma of its own is `@jsx…` then a space (`@jsxImportSource preact`), never an address that merely holds "@jsx".
  if ((loader === "tsx" || loader === "jsx") && jsxPragmasOf(text) === null) {
    const pragma = jsxPragma(options);
    if (pragma !== null) {
      // A `#!` line must stay the first: the comment goes at the start of the next one.
      const at = text.startsWith("#!") ? text.indexOf("\n") + 1 : 0;
      if (at !== 0 || !text.startsWith("#!")) return { contents: `${text.slice(0, at)}/** ${pragma} */ ${text.slice(at)}`, loader };
    }
  }
  return { contents: text, loader };
}

/** The pragma that says what the options say of JSX, or null when they say what the runtime does anyway. */
function jsxPragma(options: CompileOptions): string | null {
  if (options.jsx === "react") {
    const parts = ["@jsxRuntime classic"];
    if (options.jsxFactory) parts.push(`@jsx ${options.jsxFactory}`);
    if (options.jsxFragmentFactory) parts.push(`@jsxFrag ${options.jsxFragmentFactory}`);
    return parts.join(" ");
  }
  return options.jsxImportSource ? `@jsxImportSource ${options.jsxImportSource}` : null;
}

/**
 * The module compiled with legacy decorators. The compiler calls the automatic JSX runtime's
 * functions by names of its own (`jsx_w77yafs4`) without importing them (the runtime would add
 * that import itself): they are imported here from the import source's runtime.
 */
function withLegacyDecorators(text: string, loader: "ts" | "tsx", options: CompileOptions): string {
  const jsx = loader === "tsx" ? { jsx: options.jsx, jsxFactory: options.jsxFactory, jsxFragmentFactory: options.jsxFragmentFactory, jsxImportSource: options.jsxImportSource } : {};
  const tsconfig = JSON.stringify({ compilerOptions: { experimentalDecorators: true, emitDecoratorMetadata: options.emitDecoratorMetadata === true, ...jsx } });
  // The compiler does not take a `#!` line, which the runtime skips: the same length of comment.
  const source = text.startsWith("#!") ? `//${text.slice(2)}` : text;
  const compiled = new Bun.Transpiler({ loader, tsconfig }).transformSync(source);
  if (loader !== "tsx" || options.jsx === "react") return compiled;
  const used = new Map<string, string>();
  for (const [name, fn] of compiled.matchAll(/\b(jsxDEV|jsxs|jsx|Fragment)_[a-z0-9]{8}\b/g)) used.set(name, fn!);
  if (used.size === 0) return compiled;
  const runtime = `${options.jsxImportSource ?? "react"}/${[...used.values()].includes("jsxDEV") ? "jsx-dev-runtime" : "jsx-runtime"}`;
  const names = [...used].map(([name, fn]) => `${fn} as ${name}`).join(", ");
  return `import { ${names} } from ${JSON.stringify(runtime)};\n${compiled}`;
}
