import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { defineCommand } from "citty";
import { commandName } from "../_npm-launcher.ts";
import { findCheckoutRoot } from "../../capability/checkout.ts";
import { CAPABILITY_ID_RULE, MAX_CAPABILITY_ID_LENGTH, nonAsciiNote, skippedIdReason } from "../../capability/capability-id.ts";
import { BUILTINS } from "../../capability/builtins.ts";
import { CAPABILITY_ID, listCapabilityFiles } from "../../capability/inspect.ts";
import { TakenIds } from "../../capability/taken-ids.ts";
import { UsageError, type DocketCommandMeta } from "../_command-line.ts";
import { writeStdout } from "../_run-cli.ts";
import { nearestTsconfig, tsconfigAliases } from "../../capability/alias-targets.ts";
import { EXIT } from "../exit-code.ts";
import { installedPackageDir } from "../../capability/_missing-package.ts";
import { readConfigJson } from "../../capability/config-file.ts";

const meta: DocketCommandMeta = {
  name: "new",
  description: "Scaffold capabilities/<id>.ts in this checkout (or DIR/<id>.ts): a small working capability to edit.",
  examples: [`docket new hello.greet && docket run hello.greet --input '{"name":"Ada"}'`, "docket new tools.lint --capabilities packages/tools/caps"],
};

/** `docket new <id>` (README.md). */
export default defineCommand({
  meta,
  args: {
    id: { type: "positional", required: true, description: "Lower-case dotted, namespace.verb (like hello.greet)", valueHint: "id" },
    // As `docket serve --capabilities DIR` reads it (from the current folder): the folder `docket init --capabilities DIR` set up.
    capabilities: { type: "string", description: "Write into DIR (a capability folder that serve and run load with --capabilities DIR) instead of capabilities/", valueHint: "DIR" },
  },
  async run({ args }) {
    const command = "docket new";
    // "dup.one.js" is a valid id, but one that names a file: it would make capabilities/dup.one.js.ts.
    const named = /^(.+)\.(ts|js|mts|mjs|cts|cjs|tsx|jsx)$/.exec(args.id);
    if (named) {
      throw new UsageError(`${JSON.stringify(args.id)} looks like a file name; docket new takes the capability's id, and writes the file: docket new ${named[1]} makes capabilities/${named[1]}.ts.`, command);
    }
    if (!CAPABILITY_ID.test(args.id)) {
      throw new UsageError(`${JSON.stringify(args.id)} is not a capability id: use lower-case dotted ${CAPABILITY_ID_RULE} (like hello.greet or repo.lint-check).${nonAsciiNote(args.id)}`, command);
    }
    if (args.id.length > MAX_CAPABILITY_ID_LENGTH) throw new UsageError(`${JSON.stringify(args.id.slice(0, 40) + "…")} is ${args.id.length} characters: a capability id is at most ${MAX_CAPABILITY_ID_LENGTH} (its MCP tool is named after it); give a shorter one.`, command);
    const skipped = skippedIdReason(args.id);
    if (skipped !== null) throw new UsageError(`${JSON.stringify(args.id)} cannot be used: ${skipped}.`, command);
    const root = findCheckoutRoot(process.cwd());
    const given = args.capabilities;
    if (given !== undefined && given.trim() === "") throw new UsageError("--capabilities needs a folder, like packages/tools/caps.", command);
    const folder = given === undefined ? join(root, "capabilities") : resolve(process.cwd(), given);
    const file = join(folder, `${args.id}.ts`);
    const shown = relative(process.cwd(), file) || file;
    if (existsSync(file)) throw new UsageError(`${shown} already exists; edit it, or choose another id.`, command);
    // A folder given is loaded beside capabilities/ (serve, run): an id either holds is taken.
    const conflict = (await takenIds([...new Set([join(root, "capabilities"), folder])])).conflict(args.id, { kind: "file", file });
    if (conflict) {
      // Files load in name order, the first holder staying: of two files, either may be the one refused.
      const outcome = conflict.holder?.source.kind === "file" ? "one of the two files would not load" : "the file would never load";
      throw new UsageError(`Cannot create ${shown}: ${conflict.reason}, so ${outcome}. Choose another id.`, command);
    }
    // Run by id, a file outside capabilities/ is found only with its folder named.
    const from = given === undefined ? "" : ` --capabilities ${relative(process.cwd(), folder) || "."}`;
    // `npx docket` when the npm package's launcher ran it: a project has no `docket` on its PATH (distribution tester, session 44).
    const runIt = `${commandName()} run ${args.id}${from} --input '{"name":"Ada"}'`;
    try {
      mkdirSync(folder, { recursive: true });
    } catch (error) {
      // A folder this user cannot make, or a file in the way (distribution tester, session 47: a stack trace).
      process.stderr.write(`docket: cannot make the folder ${relative(process.cwd(), folder) || folder} for ${shown}: ${(error as Error).message}. Choose a folder you can write to with --capabilities, or fix what is in the way.\n`);
      return EXIT.failed;
    }
    try {
      writeFileSync(file, capabilityTemplate(args.id, runIt), { flag: "wx" });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // The id is the file name: one too long for the file system is the user's to shorten.
      if (code === "ENAMETOOLONG") throw new UsageError(`${JSON.stringify(args.id)} is too long for a file name here (${args.id.length + 3} characters); choose a shorter id.`, command);
      if (code === "EEXIST") throw new UsageError(`${shown} already exists; edit it, or choose another id.`, command);
      process.stderr.write(`docket: cannot write ${shown}: ${(error as Error).message}. Check that ${relative(process.cwd(), folder) || folder} is a folder you can write to.\n`);
      return EXIT.failed;
    }
    // No tsconfig.json governs the file, or the one that does maps no "docket": an editor shows
    // `Cannot find module 'docket'` and an untyped handler (authoring tester, session 46).
    const config = nearestTsconfig(folder);
    // The npm package installed in the project gives its types by itself (distribution tester, session 47).
    const installed = installedPackageDir("docket", folder);
    const typedByPackage = installed !== null && typeof readConfigJson(join(installed, "package.json"))?.types === "string";
    const untyped = !typedByPackage && (config === null || !tsconfigAliases(config).some((alias) => alias.pattern === "docket")) ? `Types:   ${commandName()} init${given === undefined ? "" : ` --capabilities ${relative(process.cwd(), folder) || "."}`}   (once: a tsconfig.json and .docket/types/, so an editor knows "docket" and "valibot")\n` : "";
    await writeStdout(`Created ${shown}\nRun it:  ${runIt}\n${untyped}`);
    return EXIT.succeeded;
  },
});

/**
 * The ids the registry would hold before a new file: the built-ins, then the files of the folders
 * by name (a file loads only when it is named after its id, so its name is its id; none is imported).
 */
async function takenIds(folders: string[]): Promise<TakenIds> {
  const taken = new TakenIds();
  for (const name of Object.keys(BUILTINS).sort()) taken.take({ id: BUILTINS[name]!.id, source: { kind: "builtin", file: name } });
  for (const file of (await Promise.all(folders.map((folder) => listCapabilityFiles(folder)))).flatMap((files) => files ?? [])) {
    const id = basename(file).replace(/\.(ts|js)$/, "");
    if (CAPABILITY_ID.test(id)) taken.take({ id, source: { kind: "file", file: relative(process.cwd(), file) || file } });
  }
  return taken;
}

/** `hello.greet` → `Hello greet`. */
function titleOf(id: string): string {
  const words = id.replace(/[._]/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * The scaffold: it imports only "docket" and "valibot" (the binary serves both, so it needs no
 * node_modules) and shows a step, progress, a log line, cancellation and a typed failure. Its
 * first line says how to run it: `runIt`, the command line `docket new` printed.
 */
export function capabilityTemplate(id: string, runIt: string): string {
  return `// ${id}: scaffolded by \`docket new\`. Run it: ${runIt}
import { capability, CapabilityError } from "docket";
import * as v from "valibot";

export default capability({
  id: "${id}",
  title: "${titleOf(id)}",
  description: "Greets someone by name, one letter at a time. Replace this with what ${id} does.",
  effect: "read",
  cancellable: true,
  errors: ["empty_name"],
  input: v.object({
    name: v.optional(v.pipe(v.string(), v.description("Who to greet.")), "world"),
  }),
  output: v.object({ greeting: v.string(), letters: v.number() }),
  examples: [{ name: "Ada" }],
  async handler(input, ctx) {
    const name = input.name.trim();
    if (name === "") throw new CapabilityError("empty_name", "input.name is empty; give a name to greet.");
    ctx.progress.step("spell", \`Spelling \${name}\`);
    for (let i = 1; i <= name.length; i++) {
      if (ctx.progress.cancelled()) throw ctx.progress.cancellation();
      ctx.progress.progress(i, name.length, name.slice(0, i));
    }
    ctx.progress.stepDone("spell", true);
    ctx.progress.log(\`Greeted \${name}\`);
    return { greeting: \`Hello, \${name}!\`, letters: name.length };
  },
});
`;
}
