import { renderUsage, type CommandDef } from "citty";
import stripAnsi from "strip-ansi";
import { commandPath, type ResolvedCommand } from "./_command-line.ts";

/**
 * The `--help` of the last command in `chain`: citty's usage, named by its full path
 * (`docket capabilities show`, which citty alone cannot do past one level), then its examples.
 * citty colours by its own rules; without colour the escapes are stripped.
 */
export async function renderHelp(chain: ResolvedCommand[], color: boolean): Promise<string> {
  const leaf = chain.at(-1)!;
  const parentName = commandPath(chain.slice(0, -1));
  const parent: CommandDef = { meta: { name: parentName, version: chain[0]!.meta.version } };
  // citty titles a command `<parent> <name>`; the root has no parent to prefix.
  const usage = chain.length === 1 ? await renderUsage(leaf.cmd) : await renderUsage({ ...leaf.cmd, meta: { ...leaf.meta, name: leaf.name } }, parent);
  const heading = (text: string) => (color ? `\u001b[4m\u001b[1m${text}\u001b[22m\u001b[24m` : text);
  const section = (title: string, lines: string[] | undefined) => (lines && lines.length > 0 ? `\n\n${heading(title)}\n\n${lines.map((l) => `  ${l}`).join("\n")}` : "");
  const examples = leaf.meta.examples ?? [];
  const text = `${usage.trimEnd()}${section(examples.length === 1 ? "EXAMPLE" : "EXAMPLES", examples)}${section("NOTES", leaf.meta.notes)}\n`;
  return color ? text : stripAnsi(text);
}
