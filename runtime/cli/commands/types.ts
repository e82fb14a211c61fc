import { relative } from "node:path";
import { defineCommand } from "citty";
import { findCheckoutRoot } from "../../capability/checkout.ts";
import type { DocketCommandMeta } from "../_command-line.ts";
import { writeStdout } from "../_run-cli.ts";
import { cannotWrite, writeEditorTypes } from "../editor-types.ts";
import { EXIT } from "../exit-code.ts";

const meta: DocketCommandMeta = {
  name: "types",
  description: "(Re)write .docket/types/: the declaration files of \"docket\" and \"valibot\" that capabilities/tsconfig.json maps, for editor types with no npm install.",
  examples: ["docket types && npx --yes -p typescript tsc --noEmit -p capabilities"],
  notes: ["Every docket command refreshes them when they are missing or from another docket, once `docket init` set up the checkout."],
};

/** `docket types` (docs/editor-types.md). */
export default defineCommand({
  meta,
  args: {},
  async run() {
    const root = findCheckoutRoot(process.cwd());
    let dir: string;
    try {
      dir = await writeEditorTypes(root);
    } catch (error) {
      process.stderr.write(`${cannotWrite(`write the editor types in ${root}`, error)}\n`);
      return EXIT.failed;
    }
    await writeStdout(`Wrote ${relative(process.cwd(), dir) || dir} (the types of "docket" and "valibot").\n`);
    return EXIT.succeeded;
  },
});
