// A module's text as the runtime is to compile it under its checkout's tsconfig.json (docs/authoring.md,
// "TypeScript settings"). The binary's runtime applies no tsconfig.json compile option to the
// modules it compiles at run time (its JSX source, its decorators): `bun run` does, and a team's
// code written for one must run the same under the other (hostile tester, session 38).
import type { CompileOptions } from "../capability/compile-options.ts";

type Loader = "ts" | "tsx" | "jsx" | "js";

/**
 * What to hand the runtime for `text` (served with `loader`) under `options`:
 * - JSX options become the pragma comment TypeScript and the runtime read in the file itself, put
 *   before line 1 on the same line, so that every line keeps its number (line 1's columns move
 *   by the comment's length). A file that has a JSX pragma of its own keeps it alone.
 * - `experimentalDecorators`: a `.ts` module that uses a decorator is compiled here with
 *   TypeScript's legacy decorators, and handed over as JavaScript; the compiled text's lines are
 *   not the file's, so an error in it names a line of the compiled text.
 */
export function compiledText(text: string, loader: Loader, options: CompileOptions): { contents: string; loader: Loader } {
  if (loader === "ts" && options.experimentalDecorators === true && /@[A-Za-z_$]/.test(text)) {
    const tsconfig = JSON.stringify({ compilerOptions: { experimentalDecorators: true, emitDecoratorMetadata: options.emitDecoratorMetadata === true } });
    return { contents: new Bun.Transpiler({ loader: "ts", tsconfig }).transformSync(text), loader: "js" };
  }
  if ((loader === "tsx" || loader === "jsx") && !/@jsx/.test(text)) {
    const pragma = jsxPragma(options);
    if (pragma !== null) return { contents: `/** ${pragma} */ ${text}`, loader };
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
