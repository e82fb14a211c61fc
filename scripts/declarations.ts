// The declaration files `docket types` writes into a checkout (docs/editor-types.md): docket's
// public API as TypeScript emits it from runtime/public.ts, and valibot's own .d.ts. The build
// embeds them in the binary; running from source, they are made here on demand.
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../", import.meta.url));
const PUBLIC_API = join(REPO, "runtime", "public.ts");
const TSC = join(REPO, "node_modules", ".bin", process.platform === "win32" ? "tsc.cmd" : "tsc");
const VALIBOT_DTS = join(REPO, "node_modules", "valibot", "dist", "index.d.mts");

/** The declaration files, by path under `.docket/types/` (`docket/public.d.ts`, `valibot/index.d.ts`, …). */
export type DeclarationFiles = Record<string, string>;

/**
 * Emits the declarations of runtime/public.ts and everything it reaches (`tsc --declaration
 * --emitDeclarationOnly`, with this repository's compiler options), keeping the tree as emitted:
 * `docket/public.d.ts` imports `./capability/declaration.ts`, which a checkout's tsconfig resolves
 * to the `.d.ts` beside it. Their only import from outside is "valibot", which the checkout's
 * tsconfig maps to `valibot/index.d.ts`, copied from the valibot docket bundles.
 */
export function generateDeclarations(): DeclarationFiles {
  const work = mkdtempSync(join(tmpdir(), "docket-declarations-"));
  try {
    const out = join(work, "out");
    writeFileSync(
      join(work, "tsconfig.json"),
      JSON.stringify({
        extends: join(REPO, "tsconfig.json"),
        compilerOptions: { noEmit: false, declaration: true, emitDeclarationOnly: true, outDir: out, rootDir: join(REPO, "runtime"), typeRoots: [join(REPO, "node_modules"), join(REPO, "node_modules", "@types")] },
        include: [],
        files: [PUBLIC_API],
      }),
    );
    const tsc = Bun.spawnSync([TSC, "-p", join(work, "tsconfig.json")], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
    const files: DeclarationFiles = {};
    if (tsc.exitCode === 0) for (const file of walk(out)) files[`docket/${relative(out, file).split("\\").join("/")}`] = readFileSync(file, "utf8");
    if (!files["docket/public.d.ts"]) {
      throw new Error(`Cannot make docket's declaration files: tsc -p ${work} said:\n${tsc.stdout.toString()}${tsc.stderr.toString()}`);
    }
    files["valibot/index.d.ts"] = readFileSync(VALIBOT_DTS, "utf8");
    // Text imports (docs/authoring.md): a `.txt` file, or one imported `with { type: "text" }`, is a
    // string. Ambient, so in a file of its own, which every file importing "docket" reaches.
    files["docket/text-imports.d.ts"] = TEXT_IMPORTS;
    files["docket/public.d.ts"] = `/// <reference path="./text-imports.d.ts" />\n${files["docket/public.d.ts"]}`;
    return files;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The files a capability imports as text, typed as the string the runtime gives (its default export). */
const TEXT_IMPORTS = `// Text a capability imports: a .txt file by its name, the others \`with { type: "text" }\`.
${["txt", "md", "markdown", "html", "htm", "css", "sql", "csv", "tsv", "xml", "svg", "graphql", "gql", "sh", "tmpl", "hbs", "mustache", "liquid", "njk", "ini", "env", "log", "diff", "patch"].map((ext) => `declare module "*.${ext}" {\n  const text: string;\n  export default text;\n}`).join("\n")}
`;

/** A short digest of the files, so that a checkout can tell types of another build from its own. */
export function declarationsDigest(files: DeclarationFiles): string {
  const hash = createHash("sha256");
  for (const name of Object.keys(files).sort()) hash.update(`${name}\0${files[name]}\0`);
  return hash.digest("hex").slice(0, 16);
}

function* walk(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.name.endsWith(".d.ts")) yield path;
  }
}
