import { relative } from "node:path";
import { defineCommand } from "citty";
import { unknownCapabilityHint } from "../../capability/unknown-capability.ts";
import { describeCapability, runsAsText, type LoadError, type RegisteredCapability } from "../../capability/registered.ts";
import type { LookalikeFile } from "../../capability/_lookalike-files.ts";
import { repeatedFlag, UsageError, type DocketCommandMeta } from "../_command-line.ts";
import { loadRegistry } from "../_load-registry.ts";
import { existingFolders } from "../_capability-folders.ts";
import { claimStdout, writeClaimed } from "../stdout-claim.ts";
import { terminalStyle, type TerminalStyle } from "../_terminal.ts";
import { EXIT } from "../exit-code.ts";
import { runnerSafe } from "../github-actions.ts";
import { location } from "../run-reporter.ts";
import { plainText, quotedText } from "../../execution/text-sanitize.ts";
import { jsonText } from "../_json-text.ts";

const shared = {
  format: { type: "enum" as const, options: ["text", "json"], default: "text", description: "text: for a person; json: one JSON document" },
  capabilities: { type: "string" as const, description: "Also load the capability files of DIR (repeatable)", valueHint: "DIR" },
};

const listMeta: DocketCommandMeta = {
  name: "list",
  repeatable: ["capabilities"],
  description: "List the loaded capabilities (id, effect, title), then the files that did not load.",
  examples: ["docket capabilities list", "docket capabilities list --format json --capabilities ./more-capabilities"],
};

const showMeta: DocketCommandMeta = {
  name: "show",
  repeatable: ["capabilities"],
  description: "Show one capability: description, effect, cancellable, input and output JSON Schemas, examples.",
  examples: ["docket capabilities show files.digest", "docket capabilities show files.digest --format json"],
};

const list = defineCommand({
  meta: listMeta,
  args: shared,
  async run({ args, rawArgs }) {
    const COMMAND = "docket capabilities list";
    // The terminal is asked first; then stdout is the listing's alone, whatever a capability file prints at load.
    const style = terminalStyle(process.stdout, process.env);
    const stdout = await claimStdout();
    const writeStdout = (text: string) => writeClaimed(stdout, text);
    const { root, registry } = await loadRegistry({ cwd: process.cwd(), capabilityDirs: existingFolders(repeatedFlag(rawArgs, "capabilities"), COMMAND) });
    const capabilities = registry.list();
    const loadErrors = registry.loadErrors();
    if (args.format === "json") {
      await writeStdout(`${JSON.stringify({ capabilities: capabilities.map(describeCapability), load_errors: loadErrors }, null, 2)}\n`);
      return EXIT.succeeded;
    }
    await writeStdout(runnerSafe(process.env, `${capabilityTable(capabilities, style)}${loadErrorLines(loadErrors, root, style)}${lookalikeLines(registry.lookalikes?.() ?? [], root, style)}`));
    return EXIT.succeeded;
  },
});

const show = defineCommand({
  meta: showMeta,
  args: { id: { type: "positional", required: true, description: "The capability id, like files.digest", valueHint: "id" }, ...shared },
  async run({ args, rawArgs }) {
    const COMMAND = "docket capabilities show";
    const style = terminalStyle(process.stdout, process.env);
    const stdout = await claimStdout();
    const writeStdout = (text: string) => writeClaimed(stdout, text);
    const { root, registry } = await loadRegistry({ cwd: process.cwd(), capabilityDirs: existingFolders(repeatedFlag(rawArgs, "capabilities"), COMMAND) });
    const found = registry.get(args.id);
    if (!found) {
      const near = registry.list().filter((c) => c.id.split(".")[0] === args.id.split(".")[0]).map((c) => c.id);
      const hint = near.length > 0 ? ` Loaded in the same namespace: ${near.join(", ")}.` : "";
      throw new UsageError(`No capability ${quotedText(args.id)} is loaded.${hint} ${unknownCapabilityHint(args.id, registry).replace("capabilities.list (docket capabilities list)", "docket capabilities list")}`, "docket capabilities show");
    }
    if (args.format === "json") {
      await writeStdout(`${JSON.stringify(describeCapability(found), null, 2)}\n`);
      return EXIT.succeeded;
    }
    await writeStdout(runnerSafe(process.env, capabilityText(found, root, style)));
    return EXIT.succeeded;
  },
});

const groupMeta: DocketCommandMeta = {
  name: "capabilities",
  description: "Read the capability registry: what this checkout can run.",
  examples: ["docket capabilities list", "docket capabilities show health.report"],
};

/** `docket capabilities list|show <id>` (README.md): projections of the registry. */
export default defineCommand({ meta: groupMeta, subCommands: { list, show } });

/** id · effect · title, aligned: the registry at a glance. */
function capabilityTable(capabilities: RegisteredCapability[], style: TerminalStyle): string {
  const rows = capabilities.map((c) => [c.id, c.execution === "never" ? `${c.effect}, direct` : c.execution === "always" ? `${c.effect}, execution` : c.effect, c.title]);
  const width = (i: number) => Math.max(...[["ID", "EFFECT"][i]!.length, ...rows.map((r) => r[i]!.length)]);
  const [idWidth, effectWidth] = [width(0), width(1)];
  const line = (r: string[]) => `${r[0]!.padEnd(idWidth)}  ${r[1]!.padEnd(effectWidth)}  ${r[2]}`;
  return `${style.bold(line(["ID", "EFFECT", "TITLE"]))}\n${rows.map(line).join("\n")}\n`;
}

/** The files that did not load, after the table: file:line:col and the reason, relative to the checkout. */
function loadErrorLines(errors: LoadError[], root: string, style: TerminalStyle): string {
  if (errors.length === 0) return "";
  const lines = errors.map((e) => {
    const file = plainText(e.file.startsWith(`${root}/`) ? relative(root, e.file) : e.file);
    return `  ${location({ file, line: e.line ?? undefined, column: e.column ?? undefined })} ${e.reason}`;
  });
  // Counted by file: one file can have several problems, each on its own line.
  const files = new Set(errors.map((e) => e.file)).size;
  return `\n${style.yellow(`${files} capability file${files === 1 ? "" : "s"} did not load:`)}\n${lines.join("\n")}\n`;
}

/** The files that look like capability files and are not loaded as ones (`x.cap.mts`, one in a subfolder), each with why (authoring tester, session 46). */
function lookalikeLines(files: LookalikeFile[], root: string, style: TerminalStyle): string {
  if (files.length === 0) return "";
  const lines = files.map((f) => `  ${plainText(f.file.startsWith(`${root}/`) ? relative(root, f.file) : f.file)} ${plainText(f.reason)}`);
  return `\n${style.yellow(`${files.length} file${files.length === 1 ? " looks" : "s look"} like a capability file but ${files.length === 1 ? "is" : "are"} not loaded:`)}\n${lines.join("\n")}\n`;
}

/** One capability for a person: facts, description, schemas, and each example as a command to run. */
function capabilityText(c: RegisteredCapability, root: string, style: TerminalStyle): string {
  const source = c.source.kind === "builtin" ? "built-in" : plainText(c.source.file.startsWith(`${root}/`) ? relative(root, c.source.file) : c.source.file);
  const facts = [
    `effect: ${c.effect}${c.effect === "write" ? " (may change something)" : ""}`,
    `cancellable: ${c.cancellable ? "yes" : "no"}`,
    `runs as: ${runsAsText(c)}`,
    ...(c.timeout_ms !== null ? [`deadline: ${c.timeout_ms} ms`] : []),
    ...(c.errors.length > 0 ? [`error codes: ${c.errors.join(", ")}`] : []),
    `source: ${source} (${c.version})`,
  ];
  const examples = c.examples.map((e) => `  docket run ${c.id} --input ${shellQuote(jsonText(e, 0))}`);
  return [
    `${style.bold(c.id)} — ${c.title}`,
    "",
    c.description,
    "",
    ...facts,
    "",
    style.bold("input schema"),
    jsonText(c.input_schema),
    "",
    style.bold("output schema"),
    jsonText(c.output_schema),
    ...(examples.length > 0 ? ["", style.bold("examples"), ...examples] : []),
    "",
  ].join("\n");
}

/** A single-quoted shell word: what a user can paste. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
