// The released binaries: size and start time of each build setting that was tried, against the
// floor — Bun's own runtime compiled around an empty script, which every binary carries. Measured
// for linux-x64 natively (interleaved, so a busy machine slows all alike), linux-arm64 under
// qemu-aarch64 when installed (emulated: only its ratio means anything); the other targets' sizes.
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI_ENTRY, compileDocket, WORKER_ENTRIES } from "../scripts/build.ts";
import { generateDeclarations } from "../scripts/declarations.ts";
import { RELEASE_TARGETS, releaseTarget } from "../scripts/release-targets.ts";

const RUNS = 15;
const AARCH64_ROOT = "/usr/aarch64-linux-gnu";

const NOOP = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "bench.noop", title: "Nothing", description: "Does nothing, for start-up measurements.", effect: "read",
  input: v.object({}), output: v.object({ ok: v.boolean() }),
  handler() { return { ok: true }; },
});
`;

interface Variant {
  name: string;
  target: string;
  bun: Bun.Build.CompileTarget;
  tuning?: { bytecode?: boolean; minify?: boolean };
  /** The floor: an empty script instead of docket. */
  empty?: boolean;
}

const VARIANTS: Variant[] = [
  { name: "shipped: baseline CPU, bytecode, no minify", target: "linux-x64", bun: "bun-linux-x64-baseline" },
  { name: "modern CPU (AVX2)", target: "linux-x64", bun: "bun-linux-x64-modern" },
  { name: "bytecode off", target: "linux-x64", bun: "bun-linux-x64-baseline", tuning: { bytecode: false } },
  { name: "minify on", target: "linux-x64", bun: "bun-linux-x64-baseline", tuning: { minify: true } },
  { name: "floor: Bun runtime + empty script", target: "linux-x64", bun: "bun-linux-x64-baseline", empty: true },
];

async function timeOnce(argv: string[], cwd: string): Promise<number> {
  const started = performance.now();
  const child = Bun.spawn(argv, { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  const [code, , stderr] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()]);
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${stderr}`);
  return performance.now() - started;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Builds each variant, then times `--version` and a no-op `run`, interleaved across variants. */
export async function benchReleaseBinaries(): Promise<{ name: string; rows: Array<Record<string, unknown>> }> {
  const scratch = mkdtempSync(join(tmpdir(), "docket-bench-release-"));
  try {
    const checkout = join(scratch, "checkout");
    Bun.spawnSync(["git", "init", "-q", checkout]);
    writeFileSync(join(checkout, "bench.noop.ts"), NOOP);
    const empty = join(scratch, "empty.ts");
    writeFileSync(empty, "if (process.argv.length > 5) console.log('never');\n");
    const declarations = generateDeclarations();
    const built: Array<Variant & { path: string; bytes: number }> = [];
    for (const [i, variant] of VARIANTS.entries()) {
      const path = join(scratch, `variant-${i}`);
      const entrypoints = variant.empty ? [empty] : [CLI_ENTRY, ...WORKER_ENTRIES];
      const result = await compileDocket({ entrypoints, outfile: path, target: { name: variant.target, bun: variant.bun }, tuning: variant.tuning, declarations });
      built.push({ ...variant, path, bytes: result.bytes });
    }
    const version: number[][] = built.map(() => []);
    const run: number[][] = built.map(() => []);
    for (let r = 0; r < RUNS; r++) {
      for (const [i, b] of built.entries()) {
        version[i]!.push(await timeOnce([b.path, "--version"], checkout));
        if (!b.empty) run[i]!.push(await timeOnce([b.path, "run", "./bench.noop.ts"], checkout));
      }
    }
    const floor = median(version[built.length - 1]!);
    const floorBytes = built.at(-1)!.bytes;
    const rows: Array<Record<string, unknown>> = built.map((b, i) => ({
      target: b.target,
      build: b.name,
      MiB: b.bytes / 2 ** 20,
      "× floor size": b.bytes / floorBytes,
      "--version ms": median(version[i]!),
      "× floor start": median(version[i]!) / floor,
      "run no-op ms": b.empty ? "" : median(run[i]!),
    }));

    // linux-arm64, emulated: the shipped build against the floor, both under qemu.
    if (Bun.which("qemu-aarch64") && existsSync(join(AARCH64_ROOT, "lib", "ld-linux-aarch64.so.1"))) {
      const arm = releaseTarget("linux-arm64");
      const docket = join(scratch, "arm64-docket");
      const floorArm = join(scratch, "arm64-empty");
      await compileDocket({ entrypoints: [CLI_ENTRY, ...WORKER_ENTRIES], outfile: docket, target: arm, declarations });
      await compileDocket({ entrypoints: [empty], outfile: floorArm, target: arm, declarations });
      const qemu = (path: string) => ["env", `QEMU_LD_PREFIX=${AARCH64_ROOT}`, "qemu-aarch64", path, "--version"];
      const d: number[] = [];
      const f: number[] = [];
      for (let r = 0; r < 5; r++) {
        d.push(await timeOnce(qemu(docket), checkout));
        f.push(await timeOnce(qemu(floorArm), checkout));
      }
      rows.push({ target: "linux-arm64 (qemu)", build: "shipped", MiB: statSync(docket).size / 2 ** 20, "× floor size": statSync(docket).size / statSync(floorArm).size, "--version ms": median(d), "× floor start": median(d) / median(f), "run no-op ms": "" });
    }
    // The targets this machine cannot run: size only.
    for (const target of RELEASE_TARGETS.filter((t) => t.os !== "linux")) {
      const path = join(scratch, `other-${target.name}${target.suffix}`);
      const result = await compileDocket({ entrypoints: [CLI_ENTRY, ...WORKER_ENTRIES], outfile: path, target, declarations });
      rows.push({ target: target.name, build: "shipped", MiB: result.bytes / 2 ** 20, "× floor size": "", "--version ms": "", "× floor start": "", "run no-op ms": "" });
    }
    return { name: "release-binaries", rows };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
