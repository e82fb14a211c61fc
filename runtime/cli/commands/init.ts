import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { defineCommand } from "citty";
import { findCheckoutRoot } from "../../capability/checkout.ts";
import { listCapabilityFiles } from "../../capability/inspect.ts";
import type { DocketCommandMeta } from "../_command-line.ts";
import { writeStdout } from "../_run-cli.ts";
import { cannotWrite, editorTsconfig, writeEditorTypes } from "../editor-types.ts";
import { EXIT } from "../exit-code.ts";
import { capabilityTemplate } from "./new.ts";

const meta: DocketCommandMeta = {
  name: "init",
  description: "Set up this checkout for capability files: capabilities/, its tsconfig.json (strict, editor types with no npm install) and a first capability.",
  examples: ["docket init && docket run hello.greet"],
  notes: ["Nothing that exists is overwritten; run it again at any time.", "Commit capabilities/ (tsconfig.json included); .docket/ ignores itself."],
};

/** The first capability `docket init` writes when capabilities/ holds none. */
const FIRST_ID = "hello.greet";

/** `docket init` (docs/editor-types.md). */
export default defineCommand({
  meta,
  args: {},
  async run() {
    const root = findCheckoutRoot(process.cwd());
    const shown = (path: string) => relative(process.cwd(), path) || path;
    if (existsSync(join(root, "runtime", "capability", "builtins.ts"))) {
      // docket's own checkout: its root tsconfig.json already types capabilities/ from source.
      await writeStdout(`${root} is a checkout of docket itself: its tsconfig.json already types capabilities/. Nothing to set up; try docket new hello.greet.\n`);
      return EXIT.succeeded;
    }
    const folder = join(root, "capabilities");
    const done: string[] = [];
    let first: string | null = null;
    try {
      if (!existsSync(folder)) {
        mkdirSync(folder, { recursive: true });
        done.push(`Created ${shown(folder)}/`);
      }
      const tsconfig = join(folder, "tsconfig.json");
      if (existsSync(tsconfig)) done.push(`Kept ${shown(tsconfig)} (it exists; its paths should map docket and valibot to ../.docket/types/)`);
      else {
        writeFileSync(tsconfig, editorTsconfig(root), { flag: "wx" });
        done.push(`Created ${shown(tsconfig)}`);
      }
      done.push(`Wrote ${shown(await writeEditorTypes(root))}/ (the types of "docket" and "valibot")`);
      if (((await listCapabilityFiles(folder)) ?? []).length === 0) {
        first = join(folder, `${FIRST_ID}.ts`);
        writeFileSync(first, capabilityTemplate(FIRST_ID), { flag: "wx" });
        done.push(`Created ${shown(first)}`);
      }
    } catch (error) {
      process.stderr.write(`${done.map((line) => `${line}\n`).join("")}${cannotWrite(`set up ${root} for capability files`, error)}\n`);
      return EXIT.failed;
    }
    const next = first ? `docket run ${FIRST_ID} --input '{"name":"Ada"}'` : "docket capabilities list";
    await writeStdout(`${done.join("\n")}\nNext:    ${next}   ·   docket new <namespace.verb>   ·   npx -p typescript tsc --noEmit -p ${shown(folder)}\n`);
    return EXIT.succeeded;
  },
});
