// Runs a composite action's steps the way GitHub's runner does, on this machine: `${{ }}`
// expressions, step `env`, `working-directory`, `if`, bash with `-eo pipefail`, and the file
// commands GITHUB_OUTPUT, GITHUB_PATH and GITHUB_STEP_SUMMARY. `actions/cache` is played by a
// folder of saved paths keyed by `key`, restored before and saved after a successful job.
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";

/** The parts of an action.yml that a composite action uses. */
interface ActionStep {
  id?: string;
  if?: string;
  shell?: string;
  run?: string;
  uses?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
  "working-directory"?: string;
}
interface ActionFile {
  inputs: Record<string, { default?: string; required?: boolean }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: ActionStep[] };
}

/** One run of the action in a job. */
export interface CompositeRun {
  /** The first failing step's exit code, or 0. */
  code: number;
  /** Everything the steps printed (stdout and stderr interleaved per step). */
  log: string;
  outputs: Record<string, string>;
  summary: string;
  /** Which steps ran (their id, or their index) and which were skipped by `if`. */
  ran: string[];
  skipped: string[];
}

/** Options of `runComposite`: the job around the action. */
export interface CompositeOptions {
  actionDir: string;
  inputs: Record<string, string>;
  workspace: string;
  /** Survives between runs: the tool cache, actions/cache's store, RUNNER_TEMP. */
  runnerDir: string;
  /** The job's environment (PATH, HOME, DOCKET_DOWNLOAD_URL …). */
  env: Record<string, string>;
}

/** Runs every step of `<actionDir>/action.yml` as a job's step `uses: ./` would. */
export async function runComposite(options: CompositeOptions): Promise<CompositeRun> {
  const action = Bun.YAML.parse(readFileSync(join(options.actionDir, "action.yml"), "utf8")) as ActionFile;
  if (action.runs.using !== "composite") throw new Error(`not a composite action: ${action.runs.using}`);
  const inputs: Record<string, string> = {};
  for (const [name, spec] of Object.entries(action.inputs)) {
    const given = options.inputs[name] ?? spec.default;
    if (given === undefined && spec.required) throw new Error(`Input required and not supplied: ${name}`);
    inputs[name] = given ?? "";
  }
  const steps: Record<string, { outputs: Record<string, string> }> = {};
  const cacheStore = join(options.runnerDir, "actions-cache");
  const temp = join(options.runnerDir, "temp");
  const toolCache = join(options.runnerDir, "tool-cache");
  for (const dir of [cacheStore, temp, toolCache]) mkdirSync(dir, { recursive: true });
  const context = (path: string): string => {
    const [scope, ...rest] = path.split(".");
    if (scope === "inputs") return inputs[rest.join(".")] ?? "";
    if (scope === "steps") return steps[rest[0]!]?.outputs[rest.slice(2).join(".")] ?? "";
    if (scope === "runner") return ({ os: "Linux", arch: "X64", temp, tool_cache: toolCache } as Record<string, string>)[rest[0]!] ?? "";
    if (scope === "github") return ({ action_path: options.actionDir, workspace: options.workspace } as Record<string, string>)[rest[0]!] ?? "";
    throw new Error(`the emulator knows no context ${JSON.stringify(path)}`);
  };
  const expand = (text: string) => text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, expression: string) => evaluate(expression));
  const evaluate = (expression: string): string => {
    const comparison = /^([\w.-]+)\s*(==|!=)\s*'([^']*)'$/.exec(expression.trim());
    if (comparison) return String((context(comparison[1]!) === comparison[3]) === (comparison[2] === "=="));
    if (/^[\w.-]+$/.test(expression.trim())) return context(expression.trim());
    throw new Error(`the emulator cannot evaluate ${JSON.stringify(expression)}; teach it or simplify action.yml`);
  };

  let path = options.env.PATH ?? "";
  let log = "";
  let summary = "";
  const saves: Array<{ key: string; path: string }> = [];
  const run: CompositeRun = { code: 0, log: "", outputs: {}, summary: "", ran: [], skipped: [] };
  for (const [index, step] of action.runs.steps.entries()) {
    const name = step.id ?? String(index);
    if (step.if !== undefined && evaluate(step.if.replace(/^\$\{\{\s*|\s*\}\}$/g, "")) !== "true") {
      run.skipped.push(name);
      continue;
    }
    run.ran.push(name);
    const outputs: Record<string, string> = {};
    if (step.uses?.startsWith("actions/cache@")) {
      const key = expand(step.with!.key!);
      const target = expand(step.with!.path!);
      const saved = join(cacheStore, encodeURIComponent(key));
      const hit = existsSync(saved);
      if (hit) cpSync(saved, target, { recursive: true });
      else saves.push({ key, path: target });
      outputs["cache-hit"] = String(hit);
    } else if (step.run !== undefined) {
      if (step.shell !== "bash") throw new Error(`step ${name}: the emulator runs shell: bash steps only`);
      const files = { GITHUB_OUTPUT: join(temp, `output-${index}`), GITHUB_PATH: join(temp, `path-${index}`), GITHUB_STEP_SUMMARY: join(temp, `summary-${index}`) };
      for (const file of Object.values(files)) writeFileSync(file, "");
      const script = join(temp, `step-${index}.sh`);
      writeFileSync(script, expand(step.run));
      const stepEnv = Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, expand(String(v))]));
      const workingDirectory = step["working-directory"] === undefined ? options.workspace : expand(step["working-directory"]);
      const child = Bun.spawn(["bash", "--noprofile", "--norc", "-eo", "pipefail", script], {
        cwd: isAbsolute(workingDirectory) ? workingDirectory : join(options.workspace, workingDirectory),
        env: {
          ...options.env,
          PATH: path,
          GITHUB_ACTIONS: "true",
          GITHUB_ACTION_PATH: options.actionDir,
          GITHUB_WORKSPACE: options.workspace,
          RUNNER_OS: "Linux",
          RUNNER_ARCH: "X64",
          RUNNER_TEMP: temp,
          RUNNER_TOOL_CACHE: toolCache,
          ...files,
          ...stepEnv,
        },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      log += out + err;
      Object.assign(outputs, parseOutputs(readFileSync(files.GITHUB_OUTPUT, "utf8")));
      for (const added of readFileSync(files.GITHUB_PATH, "utf8").split("\n").filter(Boolean).reverse()) path = `${added}:${path}`;
      summary += readFileSync(files.GITHUB_STEP_SUMMARY, "utf8");
      if (code !== 0) {
        run.code = code;
        if (step.id) steps[step.id] = { outputs };
        break;
      }
    } else {
      throw new Error(`step ${name}: the emulator knows only run: steps and actions/cache`);
    }
    if (step.id) steps[step.id] = { outputs };
  }
  // actions/cache saves in its post step, and only for a job that succeeded.
  if (run.code === 0) for (const save of saves) if (existsSync(save.path)) cpSync(save.path, join(cacheStore, encodeURIComponent(save.key)), { recursive: true });
  for (const [name, spec] of Object.entries(action.outputs)) run.outputs[name] = expand(spec.value);
  return { ...run, log, summary };
}

/** The GITHUB_OUTPUT file's `name=value` and `name<<DELIMITER … DELIMITER` entries. */
export function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === "") continue;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2]!, i + 1);
      if (end < 0) throw new Error(`GITHUB_OUTPUT: ${heredoc[1]} has no closing ${heredoc[2]}`);
      outputs[heredoc[1]!] = lines.slice(i + 1, end).join("\n");
      i = end;
      continue;
    }
    const eq = line.indexOf("=");
    if (eq < 0) throw new Error(`GITHUB_OUTPUT: malformed line ${JSON.stringify(line)}`);
    outputs[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return outputs;
}
