import { compileOptionsOf } from "../../capability/compile-options.ts";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, posix, relative, resolve, sep } from "node:path";
import { defineCommand } from "citty";
import { commandName } from "../_npm-launcher.ts";
import { findCheckoutRoot } from "../../capability/checkout.ts";
import { tsconfigAliases } from "../../capability/alias-targets.ts";
import { parseJsonc } from "../../capability/jsonc.ts";
import { listCapabilityFiles } from "../../capability/inspect.ts";
import { readRegularFileText } from "../../capability/open-regular-file.ts";
import { repeatedFlag, type DocketCommandMeta } from "../_command-line.ts";
import { writeStdout } from "../_run-cli.ts";
import { cannotWrite, editorTsconfig, fromFolder, writeEditorTypes } from "../editor-types.ts";
import { EXIT } from "../exit-code.ts";
import { ensureDocketDir } from "../../server/lease.ts";
import { capabilityTemplate } from "./new.ts";

const meta: DocketCommandMeta = {
  name: "init",
  repeatable: ["capabilities"],
  description: "Set up this checkout for capability files: capabilities/, its tsconfig.json (strict, editor types with no npm install) and a first capability.",
  examples: ["docket init && docket run hello.greet", "docket init --capabilities packages/tools/caps"],
  notes: ["Nothing that exists is overwritten; run it again at any time.", "Commit capabilities/ (tsconfig.json included); .docket/ ignores itself."],
};

/** The first capability `docket init` writes when capabilities/ holds none. */
const FIRST_ID = "hello.greet";

/** `docket init` (docs/editor-types.md). */
export default defineCommand({
  meta,
  args: {
    capabilities: { type: "string", description: "Set up DIR (a package's capability folder, repeatable) instead of capabilities/", valueHint: "DIR" },
  },
  async run({ rawArgs }) {
    const root = findCheckoutRoot(process.cwd());
    const shown = (path: string) => relative(process.cwd(), path) || path;
    if (existsSync(join(root, "runtime", "capability", "builtins.ts"))) {
      // docket's own checkout: its root tsconfig.json already types capabilities/ from source.
      await writeStdout(`${root} is a checkout of docket itself: its tsconfig.json already types capabilities/. Nothing to set up; try docket new hello.greet.\n`);
      return EXIT.succeeded;
    }
    // capabilities/, or the folders given: each gets its own tsconfig.json, and the types are the checkout's.
    const given = repeatedFlag(rawArgs, "capabilities").map((dir) => resolve(process.cwd(), dir));
    const folders = given.length > 0 ? given : [join(root, "capabilities")];
    const done: string[] = [];
    let first: string | null = null;
    try {
      // Before anything is made: a .docket that cannot be docket's folder (a committed link) is
      // refused here, not after capabilities/ was created, which left a checkout half set up.
      ensureDocketDir(root);
      for (const folder of folders) {
        if (!existsSync(folder)) {
          mkdirSync(folder, { recursive: true });
          done.push(`Created ${shown(folder)}/`);
        }
        const tsconfig = join(folder, "tsconfig.json");
        if (existsSync(tsconfig)) done.push(`Kept ${shown(tsconfig)} (it exists; its paths should map docket and valibot to the checkout's .docket/types/)`);
        else {
          const aliases = rootAliases(root, folder);
          const rootConfig = join(root, "tsconfig.json");
          const compile = existsSync(rootConfig) ? compileOptionsOf(rootConfig) : {};
          writeFileSync(tsconfig, editorTsconfig(root, aliases, folder, compile), { flag: "wx" });
          const copied = [...Object.keys(aliases), ...Object.keys(compile)];
          done.push(`Created ${shown(tsconfig)}${copied.length === 0 ? "" : ` with the paths aliases and the JSX and decorator options of ${shown(rootConfig)} (${copied.join(", ")}): only the nearest tsconfig.json's apply to a file`}`);
        }
      }
      done.push(`Wrote ${shown(await writeEditorTypes(root))}/ (the types of "docket" and "valibot")`);
      const folder = folders[0]!;
      if (given.length === 0 && ((await listCapabilityFiles(folder)) ?? []).length === 0) {
        first = join(folder, `${FIRST_ID}.ts`);
        writeFileSync(first, capabilityTemplate(FIRST_ID, `${commandName()} run ${FIRST_ID} --input '{"name":"Ada"}'`), { flag: "wx" });
        done.push(`Created ${shown(first)}`);
      }
    } catch (error) {
      process.stderr.write(`${done.map((line) => `${line}\n`).join("")}${cannotWrite(`set up ${root} for capability files`, error)}\n`);
      return EXIT.failed;
    }
    // A folder given is one docket reads only when told: each next command names it (the first, of several).
    const dirFlag = given.length === 0 ? "" : ` --capabilities ${shown(folders[0]!)}`;
    // `npx docket` when the npm package's launcher ran it: a project has no `docket` on its PATH (distribution tester, session 44).
    const docket = commandName();
    const next = first ? `${docket} run ${FIRST_ID}${dirFlag} --input '{"name":"Ada"}'` : `${docket} capabilities list${dirFlag}`;
    await writeStdout(`${done.join("\n")}\nNext:    ${next}   ·   ${docket} new <namespace.verb>${dirFlag}   ·   ${folders.map((folder) => `npx --yes -p typescript tsc --noEmit -p ${shown(folder)}`).join("   ·   ")}\n`);
    // The checkout's capabilities/, set up by an earlier init, is named beside the folders given:
    // a note naming only these would have its exclude line drop it (walkthrough tester, session 40).
    const standard = join(root, "capabilities");
    const noted = folders.includes(standard) || !existsSync(join(standard, "tsconfig.json")) ? folders : [standard, ...folders];
    const note = await rootTsconfigNote(join(root, "tsconfig.json"), shown, [...new Set(noted.map((folder) => relative(root, folder).split(sep).join("/")))]);
    if (note !== null) process.stderr.write(note);
    return EXIT.succeeded;
  },
});

/**
 * The `paths` aliases of the checkout's root tsconfig.json, rebased for a config in `folder`
 * (capabilities/): TypeScript, and Bun resolving imports, read only the nearest config's `paths`,
 * so without them a team's `@/…` imports would not resolve in capability files. "docket" and
 * "valibot" stay docket's own. None when there is no root config or it does not parse (JSON with comments, as TypeScript reads it).
 */
function rootAliases(root: string, folder: string): Record<string, string[]> {
  const config = join(root, "tsconfig.json");
  if (!existsSync(config)) return {};
  const aliases: Record<string, string[]> = {};
  for (const alias of tsconfigAliases(config)) {
    if (alias.pattern === "docket" || alias.pattern === "valibot" || alias.targets.length === 0) continue;
    aliases[alias.pattern] = [...new Set(alias.targets.flatMap((target) => fromFolder(root, folder, target)))];
  }
  return aliases;
}

/**
 * A note for a root tsconfig.json that type-checks capabilities/ too (docs/editor-types.md): with
 * its own settings "docket" and "valibot" have no types, and the team's `tsc -p .` starts to fail.
 * The user's file is theirs to edit; null when there is none or it leaves capabilities/ out.
 */
async function rootTsconfigNote(file: string, shown: (path: string) => string, folders: string[]): Promise<string | null> {
  let text: string;
  try {
    // A regular file only: a FIFO by that name would hold init for ever (open-regular-file.ts).
    text = await readRegularFileText(file);
  } catch {
    return null;
  }
  const own = parseObject(text);
  // As TypeScript reads it: include, exclude and files come from the nearest config of the
  // `extends` chain that sets them, each read relative to the folder of that config.
  const config = own === null ? null : await withExtends(own, dirname(file), dirname(file), 0);
  const exclude = strings(config?.exclude);
  // As TypeScript reads them: no `include` means every file, unless `files` is given.
  const include = config === null ? ["**/*"] : config.include === undefined ? (config.files === undefined ? ["**/*"] : []) : strings(config.include);
  const checked = folders.filter((folder) => {
    if (exclude.some((entry) => reaches(entry, folder))) return false;
    // Not plain JSON (comments, trailing commas): a look at its text, else it may check the folder and the note stands.
    if (config === null && new RegExp(`"exclude"\\s*:\\s*\\[[^\\]]*"(\\./)?${escapeRegExp(folder)}[/*"]`).test(text)) return false;
    return [...include, ...strings(config?.files)].some((entry) => reaches(entry, folder));
  });
  if (checked.length === 0) return null;
  const line = `"exclude": [${[...exclude, ...checked].map((entry) => JSON.stringify(entry)).join(", ")}]`;
  const edit = config?.exclude === undefined ? "add this line to it" : "make its exclude this";
  return (
    `Note: ${shown(file)} type-checks ${checked.map((folder) => `${folder}/`).join(" and ")} too, with its own settings, where "docket" and "valibot" have no types: ` +
    `tsc -p . will fail with "Cannot find module 'docket'". docket does not edit it; ${edit} (docs/editor-types.md):\n  ${line}\n`
  );
}

/**
 * True when a tsconfig `include`, `exclude` or `files` entry (relative to the checkout) can name a
 * capability file (.ts, .js) under `folder` (relative too, with `/`): an entry naming a folder
 * covers everything in it; `**` is any number of folders, `*` and `?` stay within one name.
 */
function reaches(entry: string, folder: string): boolean {
  // A folder outside the checkout (or the checkout itself, which no exclude could leave out) is no note's business.
  if (folder === "" || folder === ".." || folder.startsWith("../")) return false;
  const parts = entry.replace(/^\.\//, "").split("/").filter((part) => part !== "" && part !== ".");
  const last = parts.at(-1) ?? "";
  // A last segment naming files by their extension (`**/*.mts`) reaches no capability file.
  if (/[*?]/.test(last) && last.includes(".") && !["x.ts", "x.js"].some((file) => segmentPattern(last).test(file))) return false;
  // A plain name (no wildcard, no extension) is a folder, and TypeScript reads all of it.
  const pattern = parts.length === 0 || !/[*?.]/.test(last) ? [...parts, "**", "*"] : parts;
  return segmentsMatch(pattern, [...folder.split("/").filter((part) => part !== ""), "x.ts"]);
}

/** Whether path segments match pattern segments (`**`: zero or more segments). */
function segmentsMatch(pattern: string[], path: string[]): boolean {
  if (pattern.length === 0) return path.length === 0;
  const [head, ...rest] = pattern;
  // TypeScript's wildcards pass over names that begin with a dot (.tools/, .github/).
  const wildcard = (segment: string) => /[*?]/.test(segment);
  if (head === "**") return segmentsMatch(rest, path) || (path.length > 0 && !path[0]!.startsWith(".") && segmentsMatch(pattern, path.slice(1)));
  if (path.length === 0 || (wildcard(head!) && path[0]!.startsWith("."))) return false;
  return segmentPattern(head!).test(path[0]!) && segmentsMatch(rest, path.slice(1));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** One path segment of a tsconfig pattern (`*`, `?`) as a regular expression. */
function segmentPattern(segment: string): RegExp {
  return new RegExp(`^${segment.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")}$`);
}

/** How many configs deep an `extends` chain is followed. */
const MAX_EXTENDS = 8;

/**
 * A config with the include, exclude and files it inherits through a relative `extends`, their
 * entries made relative to `root` (the checkout's folder). A base that cannot be read, or a
 * package's (`@tsconfig/node20`), sets none of them.
 */
async function withExtends(config: Record<string, unknown>, dir: string, root: string, depth: number): Promise<Record<string, unknown>> {
  const rebased = (entries: unknown) => (Array.isArray(entries) ? strings(entries).map((entry) => posix.join(relative(root, dir).split(sep).join("/") || ".", entry)) : undefined);
  const own: Record<string, unknown> = { ...config };
  for (const key of ["include", "exclude", "files"]) if (own[key] !== undefined) own[key] = rebased(own[key]);
  const bases = (typeof config.extends === "string" ? [config.extends] : strings(config.extends)).filter((base) => base.startsWith("."));
  if (depth >= MAX_EXTENDS) return own;
  for (const base of bases.reverse()) {
    const path = resolve(dir, base.endsWith(".json") ? base : `${base}.json`);
    let parsed: Record<string, unknown> | null = null;
    try {
      parsed = parseObject(await readRegularFileText(path));
    } catch {
      continue;
    }
    if (parsed === null) continue;
    const inherited = await withExtends(parsed, dirname(path), root, depth + 1);
    for (const key of ["include", "exclude", "files"]) if (own[key] === undefined && inherited[key] !== undefined) own[key] = inherited[key];
  }
  return own;
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    // With comments and trailing commas, as TypeScript reads it (and `tsc --init` writes it).
    const value = parseJsonc(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}
