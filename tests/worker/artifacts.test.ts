import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { checkArtifactName, createArtifactWriter } from "../../runtime/worker/_artifacts.ts";

const LIMITS = { files: 3, bytes: 10, total_bytes: 20, disk_free_floor: 0 };
let root = "";
let dir = "";

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "docket-artifacts-"));
  dir = join(root, ".docket", "artifacts", "x-20260908T010203Z-0a1b2c3d");
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The CapabilityError a promise rejects with (fails the test if it resolves or throws something else). */
async function failure(promise: Promise<unknown>): Promise<CapabilityError> {
  try {
    await promise;
  } catch (error) {
    if (CapabilityError.is(error)) return error;
    throw error;
  }
  throw new Error("expected a CapabilityError, but the write succeeded");
}

describe("ctx.artifacts.write", () => {
  test("write creates the folder 0700, writes the file 0600, and answers name, bytes and sha256", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    const result = await writer.write("out.txt", "héllo");
    const bytes = Buffer.from("héllo");
    expect(result).toEqual({ name: "out.txt", bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") });
    expect(await readFile(join(dir, "out.txt"), "utf8")).toBe("héllo");
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, "out.txt"))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(root, ".docket", ".gitignore"), "utf8")).toBe("*\n");
  });

  test("write accepts a Uint8Array and replaces an artifact written twice", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    await writer.write("data.bin", "0123456789");
    expect(await writer.write("data.bin", new Uint8Array([1, 2, 3]))).toMatchObject({ bytes: 3 });
    expect([...(await readFile(join(dir, "data.bin")))]).toEqual([1, 2, 3]);
  });

  test("names that are not one plain path segment are refused as invalid_input", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    for (const name of ["", ".", "..", "../escape.txt", "a/b.txt", "a\\b.txt", "/etc/passwd", "nul\0.txt", "line\nbreak", "x".repeat(256)]) {
      const error = await failure(writer.write(name, "x"));
      expect(error.code).toBe("invalid_input");
      expect(error.message).toContain("Cannot write artifact");
    }
    expect(() => checkArtifactName(42)).toThrow(/must be a string/);
    // Nothing escaped, and a refused name does not even create the folder.
    expect(await readdir(root)).toEqual([]);
  });

  test("a name that holds a sensitive value of the input is refused, without quoting it: names are shown to every client", async () => {
    const mask = (text: string) => text.replaceAll("tok-9f8e7d", "[redacted]");
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS }, mask);
    const error = await failure(writer.write("report-tok-9f8e7d.json", "x"));
    expect(error).toMatchObject({ code: "invalid_input", context: { name: "report-[redacted].json" } });
    expect(JSON.stringify({ message: error.message, context: error.context })).not.toContain("tok-9f8e7d");
    expect((await writer.write("report.json", "x")).name).toBe("report.json");
  });

  test("a name holding a C1 control (an 8-bit escape) is refused, and a refused name is quoted with the secret masked, before JSON spells its control characters", async () => {
    const mask = (text: string) => text.replace(/Qz7kW[\u0007\u009b1m]*p3mVb9tRx/g, "[redacted]");
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS }, mask);
    expect((await failure(writer.write("a\u009b1mb.txt", "x"))).message).toContain("control characters");
    for (const name of ["Qz7kW\u009b1mp3mVb9tRx", "xQz7kW\u0007p3mVb9tRx.txt"]) {
      const error = await failure(writer.write(name, "x"));
      expect(error.code).toBe("invalid_input");
      expect(JSON.stringify({ message: error.message, context: error.context })).not.toContain("Qz7kW");
    }
    expect(await readdir(root)).toEqual([]);
  });

  test("a symlink at the artifact's name is refused and its target left untouched", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    await writer.write("first.txt", "1");
    const target = join(root, "outside.txt");
    await writeFile(target, "precious");
    await symlink(target, join(dir, "link.txt"));
    const error = await failure(writer.write("link.txt", "overwrite"));
    expect(error.code).toBe("artifact_refused");
    expect(await readFile(target, "utf8")).toBe("precious");
    expect((await lstat(join(dir, "link.txt"))).isSymbolicLink()).toBe(true);
  });

  test("an artifact folder that is a symlink is refused", async () => {
    const elsewhere = join(root, "elsewhere");
    await mkdir(elsewhere);
    await mkdir(join(root, ".docket", "artifacts"), { recursive: true });
    await symlink(elsewhere, dir);
    const error = await failure(createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS }).write("a.txt", "x"));
    expect(error.code).toBe("artifact_refused");
    expect(await readdir(elsewhere)).toEqual([]);
  });

  // sysfs refuses mkdir to everyone, root included: what a read-only checkout or a full disk does.
  test.skipIf(process.platform !== "linux")("a folder that cannot be created (a read-only checkout, a full disk) is artifacts_unavailable naming it, not an internal error", async () => {
    const unwritable = "/sys/docket-artifacts-test/x";
    const error = await failure(createArtifactWriter({ artifacts_dir: unwritable, artifact_limits: LIMITS }).write("a.txt", "x"));
    expect(error).toMatchObject({ code: "artifacts_unavailable", context: { path: "/sys/docket-artifacts-test", code: expect.stringMatching(/^(EPERM|EACCES|EROFS)$/) } });
    expect(error.message).toMatch(/^Cannot write artifacts: \/sys\/docket-artifacts-test cannot be created \((EPERM|EACCES|EROFS): /);
  });

  test("a file standing where .docket/ should be is artifacts_unavailable too, naming the path from .docket/ on", async () => {
    const checkout = join(root, "file-docket");
    await mkdir(checkout);
    await writeFile(join(checkout, ".docket"), "x");
    const error = await failure(createArtifactWriter({ artifacts_dir: join(checkout, ".docket", "artifacts", "x"), artifact_limits: LIMITS }).write("a.txt", "x"));
    expect(error).toMatchObject({ code: "artifacts_unavailable", context: { code: expect.stringMatching(/^(ENOTDIR|EEXIST)$/) } });
    // Named from the checkout's .docket/ on: a failure is shown to clients, the server's paths are not theirs.
    expect(error.context!.path).toMatch(/^\.docket/);
    expect(JSON.stringify([error.message, error.context])).not.toContain(root);
  });

  test("a folder standing at the artifact's name is refused", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    await mkdir(join(dir, "sub"), { recursive: true });
    expect((await failure(writer.write("sub", "x"))).code).toBe("artifact_refused");
  });

  test("bytes per file: one byte over the limit is artifact_limit, the limit itself is fine", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    const error = await failure(writer.write("big.txt", "x".repeat(11)));
    expect(error.code).toBe("artifact_limit");
    expect(error.context).toMatchObject({ name: "big.txt", bytes: 11, limit: 10 });
    expect(await writer.write("ok.txt", "x".repeat(10))).toMatchObject({ bytes: 10 });
  });

  test("files per execution: the one past the limit is artifact_limit; rewriting an existing name is not", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    for (const name of ["a", "b", "c"]) await writer.write(name, "1");
    const error = await failure(writer.write("d", "1"));
    expect(error.code).toBe("artifact_limit");
    expect(error.context).toMatchObject({ files: 3, limit: 3 });
    expect(await writer.write("a", "2")).toMatchObject({ bytes: 1 });
    expect((await readdir(dir)).sort()).toEqual(["a", "b", "c"]);
  });

  test("total bytes: a write that would pass the total is artifact_limit; replacing frees the old size", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    await writer.write("a", "x".repeat(10));
    await writer.write("b", "x".repeat(8));
    const error = await failure(writer.write("c", "xxx"));
    expect(error.code).toBe("artifact_limit");
    expect(error.context).toMatchObject({ total_bytes: 21, limit: 20 });
    await writer.write("a", "x".repeat(2)); // total 10 now
    expect(await writer.write("c", "x".repeat(10))).toMatchObject({ bytes: 10 });
  });

  test("disk_free_floor: a write that would leave the disk with less free is artifact_limit (disk_low), writes nothing and reserves nothing", async () => {
    // No disk has 2^50 bytes free: every write would go under this floor.
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: { ...LIMITS, disk_free_floor: 2 ** 50 } });
    const error = await failure(writer.write("a", "x".repeat(10)));
    expect(error.code).toBe("artifact_limit");
    expect(error.context).toMatchObject({ name: "a", reason: "disk_low", bytes: 10, floor_bytes: 2 ** 50 });
    expect(error.context!.free_bytes).toBeGreaterThan(0);
    expect(error.message).toContain("disk_free_floor_bytes");
    expect(error.suggestion).toContain("Free disk space");
    expect(existsSync(join(dir, "a"))).toBe(false);
    // A refused write holds no place: past the 3-file limit, still the disk is what refuses.
    for (const name of ["b", "c", "d", "e"]) expect((await failure(writer.write(name, "x"))).context).toMatchObject({ reason: "disk_low" });
    // A floor the disk keeps: the same writes go through.
    const roomy = createArtifactWriter({ artifacts_dir: dir, artifact_limits: { ...LIMITS, disk_free_floor: 1 } });
    expect(await roomy.write("a", "x".repeat(10))).toMatchObject({ bytes: 10 });
    expect(await roomy.write("b", "x".repeat(10))).toMatchObject({ bytes: 10 });
  });

  test("a link planted at .docket/artifacts or .docket is refused, not followed out of the checkout (tester U)", async () => {
    for (const linked of [join(root, ".docket", "artifacts"), join(root, ".docket")]) {
      await rm(join(root, ".docket"), { recursive: true, force: true });
      const elsewhere = await mkdtemp(join(tmpdir(), "docket-elsewhere-"));
      await mkdir(join(root, ".docket"), { recursive: true });
      if (linked.endsWith(".docket")) await rm(linked, { recursive: true });
      await symlink(elsewhere, linked);
      const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
      const error = await failure(writer.write("a.txt", "x"));
      expect(error.code).toBe("artifact_refused");
      expect(error.message).toContain("is a symlink or not a folder");
      // Refused before anything was made through the link: not even an empty folder out there.
      expect(await readdir(elsewhere)).toEqual([]);
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  test("concurrent writes cannot overshoot the total between them", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    const results = await Promise.allSettled(["a", "b", "c"].map((name) => writer.write(name, "x".repeat(8))));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
  });

  test("a refused write does not count against the limits", async () => {
    const writer = createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS });
    await mkdir(join(dir, "taken"), { recursive: true });
    await failure(writer.write("taken", "x".repeat(10)));
    await writer.write("a", "x".repeat(10));
    expect(await writer.write("b", "x".repeat(10))).toMatchObject({ bytes: 10 });
  });

  test("in a direct call (no folder) write is artifacts_unavailable, with a message saying why", async () => {
    const error = await failure(createArtifactWriter({ artifacts_dir: null, artifact_limits: LIMITS }).write("a.txt", "x"));
    expect(error.code).toBe("artifacts_unavailable");
    expect(error.message).toContain("a direct call has no artifact folder");
  });
});

// A file size limit (ulimit -f, with SIGXFSZ ignored) makes a large write fail part-way with
// EFBIG, as a full disk does with ENOSPC: what a write cut short leaves.
describe.skipIf(process.platform !== "linux")("an artifact write cut short", () => {
  test("leaves no artifact listed with bytes it never had, and the artifact written before under that name as it was", async () => {
    const script = join(root, "write.ts");
    await writeFile(
      script,
      `import { createArtifactWriter } from ${JSON.stringify(join(import.meta.dir, "../../runtime/worker/_artifacts.ts"))};
const writer = createArtifactWriter({ artifacts_dir: ${JSON.stringify(dir)}, artifact_limits: { files: 10, bytes: 1 << 30, total_bytes: 1 << 30, disk_free_floor: 0 } });
await writer.write("kept.txt", "the first version");
const cut = [];
for (const name of ["kept.txt", "new.bin"]) await writer.write(name, "x".repeat(1 << 20)).catch((error) => cut.push(name + " " + error.code));
console.log(JSON.stringify(cut));`,
    );
    // 200 blocks of 1 KiB: the small write fits, the 1 MiB ones do not.
    const run = Bun.spawnSync(["bash", "-c", `trap '' XFSZ; ulimit -f 200; exec "${process.execPath}" "${script}"`], { stderr: "pipe" });
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout.toString())).toEqual(["kept.txt EFBIG", "new.bin EFBIG"]);
    const { listArtifacts } = await import("../../runtime/execution/artifact-files.ts");
    const listed = listArtifacts(root, "x-20260908T010203Z-0a1b2c3d");
    expect(listed.map((a) => [a.name, a.bytes])).toEqual([["kept.txt", "the first version".length]]);
    expect(await readFile(join(dir, "kept.txt"), "utf8")).toBe("the first version");
    // Nothing of the cut writes is left in the folder either.
    expect(await readdir(dir)).toEqual(["kept.txt"]);
  });

  test("no artifact may be named as docket's partial files are", async () => {
    const error = await failure(createArtifactWriter({ artifacts_dir: dir, artifact_limits: LIMITS }).write(".docket-partial-1", "x"));
    expect(error).toMatchObject({ code: "invalid_input" });
    expect(error.message).toContain("docket's own");
  });
});
