import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, realpath, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import digest from "../../capabilities/files.digest.ts";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { sha256File } from "../../runtime/capability/sha256-file.ts";
import { removeCheckout, tempCheckout, writeFiles } from "../_support/capability-fixtures.ts";
import { createTestContext, runHandler, TestCancellation } from "../_support/test-context.ts";

const sha = (text: string | Uint8Array) => createHash("sha256").update(text).digest("hex");

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the handler to fail");
}

let root: string;

beforeEach(async () => {
  root = await tempCheckout();
  await writeFiles(root, {
    "a.txt": "alpha\n",
    "src/b.ts": "export const b = 1;\n",
    "src/b.test.ts": "test\n",
    "src/deep/c.md": "# c\n",
    "node_modules/pkg/index.js": "skip me\n",
    ".docket/artifacts/x": "skip me\n",
    ".git/HEAD": "ref: refs/heads/main\n",
  });
});

afterEach(async () => {
  await removeCheckout(root);
});

describe("files.digest", () => {
  test("files.digest returns a sorted sha256sum manifest of the checkout in a direct call", async () => {
    const t = createTestContext({ root });
    const output = await runHandler(digest, {}, t.ctx);
    const expected = [
      `${sha("alpha\n")}  a.txt\n`,
      `${sha("test\n")}  src/b.test.ts\n`,
      `${sha("export const b = 1;\n")}  src/b.ts\n`,
      `${sha("# c\n")}  src/deep/c.md\n`,
    ].join("");
    expect(output).toEqual({ files: 4, bytes: 6 + 5 + 20 + 4, digest: sha(expected), manifest: expected });
    expect(t.artifacts.size).toBe(0);
  });

  test("files.digest writes manifest.sha256 as an artifact in an execution", async () => {
    const t = createTestContext({ root, execution: true });
    const output = await runHandler(digest, {}, t.ctx);
    expect(output.manifest_artifact).toBe("manifest.sha256");
    expect(output.manifest).toBeUndefined();
    const written = new TextDecoder().decode(t.artifacts.get("manifest.sha256"));
    expect(output.digest).toBe(sha(written));
    expect(written.split("\n").filter(Boolean)).toHaveLength(4);
  });

  test("files.digest in a checkout that keeps no artifacts (read-only, a full disk) answers with the manifest in its output and a warning", async () => {
    const t = createTestContext({ root, execution: true });
    const unavailable = new CapabilityError("artifacts_unavailable", "Cannot write artifacts: /ro/.docket cannot be created (EROFS: a read-only file system).");
    const ctx = { ...t.ctx, artifacts: { write: () => Promise.reject(unavailable) } };
    const output = await runHandler(digest, {}, ctx);
    expect(output.manifest_artifact).toBeUndefined();
    expect(output.digest).toBe(sha(output.manifest!));
    expect(t.events).toContainEqual({ type: "log", level: "warn", message: `${unavailable.message} The manifest is in the output instead.` });
  });

  test("files.digest reports progress per file and a step per phase", async () => {
    const t = createTestContext({ root });
    await runHandler(digest, {}, t.ctx);
    expect(t.progress().map((p) => [p.current, p.total, p.message])).toEqual([
      [1, 4, "a.txt"],
      [2, 4, "src/b.test.ts"],
      [3, 4, "src/b.ts"],
      [4, 4, "src/deep/c.md"],
    ]);
    expect(t.steps().map((s) => [s.id, s.ok])).toEqual([
      ["walk", true],
      ["hash", true],
    ]);
  });

  test("files.digest applies include and exclude globs relative to path, with paths still relative to the root", async () => {
    const t = createTestContext({ root });
    const output = await runHandler(digest, { path: "src", include: ["*.ts"], exclude: ["*.test.ts"] }, t.ctx);
    expect(output.manifest).toBe(`${sha("export const b = 1;\n")}  src/b.ts\n`);
  });

  test("files.digest matches many-star globs against long names at once, and refuses a glob it cannot take as invalid_input naming it (foundation tester, session 50: a minute on one worker)", async () => {
    await writeFiles(root, { [`long/${"a".repeat(200)}`]: "x\n", "long/ab": "y\n" });
    const t = createTestContext({ root });
    const output = await runHandler(digest, { path: "long", include: [`${"*a".repeat(30)}*b`] }, t.ctx);
    expect(output.files).toBe(0);
    const matched = await runHandler(digest, { path: "long", include: ["*a*b"] }, t.ctx);
    expect(matched.manifest).toBe(`${sha("y\n")}  long/ab\n`);
    const refused = await rejection(runHandler(digest, { path: "long", exclude: ["[z-a]"] }, t.ctx));
    expect(refused).toBeInstanceOf(CapabilityError);
    expect([(refused as CapabilityError).code, (refused as CapabilityError).message]).toEqual(["invalid_input", expect.stringContaining('"[z-a]"')]);
  });

  test("files.digest prunes an excluded folder", async () => {
    const t = createTestContext({ root });
    const output = await runHandler(digest, { exclude: ["deep"] }, t.ctx);
    expect(output.manifest).not.toContain("c.md");
    expect(output.files).toBe(3);
  });

  test("files.digest digests a single file given as path", async () => {
    const t = createTestContext({ root });
    const output = await runHandler(digest, { path: "src/b.ts" }, t.ctx);
    expect(output.manifest).toBe(`${sha("export const b = 1;\n")}  src/b.ts\n`);
  });

  test("files.digest hashes a file larger than one read chunk correctly", async () => {
    const big = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => i % 251);
    await writeFile(join(root, "big.bin"), big);
    const t = createTestContext({ root });
    const output = await runHandler(digest, { path: "big.bin" }, t.ctx);
    expect(output.manifest).toBe(`${sha(big)}  big.bin\n`);
    expect(output.bytes).toBe(big.length);
  });

  test("files.digest escapes a name with a backslash or newline as sha256sum does", async () => {
    await writeFile(join(root, "odd\\na\nme.txt"), "x");
    const t = createTestContext({ root });
    const output = await runHandler(digest, { include: ["odd*"] }, t.ctx);
    expect(output.manifest).toBe(`\\${sha("x")}  odd\\\\na\\nme.txt\n`);
  });

  test("a file whose name is not valid UTF-8 is said to be so, not a file that does not exist with 'fix the permissions' (foundation tester, session 48)", async () => {
    await writeFile(Buffer.concat([Buffer.from(join(root, "src/")), Buffer.from([0xff, 0xfe]), Buffer.from("bad.txt")]), "g");
    const t = createTestContext({ root });
    const error = await rejection(runHandler(digest, { path: "src" }, t.ctx));
    expect(CapabilityError.is(error) && error.message).toBe("1 of 4 files could not be read, so no manifest was written; see the diagnostics: fix what each says (permissions, a name), or exclude those files");
    const said = t.diagnostics().find((d) => d.code === "name_not_utf8");
    expect(said?.message).toBe("Cannot read src/\uFFFD\uFFFDbad.txt: its name is not valid UTF-8 (shown with � for the bytes that are not), which a manifest cannot name; rename it, or exclude it");
    // A folder, or a link, so named is said the same way, never a walk that throws nor a "broken link".
    await mkdir(Buffer.concat([Buffer.from(join(root, "d2/bad")), Buffer.from([0xff]), Buffer.from("dir")]), { recursive: true });
    await symlink("ok.txt", Buffer.concat([Buffer.from(join(root, "d2/link")), Buffer.from([0xfd])]));
    await writeFile(join(root, "d2/ok.txt"), "ok");
    const named = createTestContext({ root });
    const refused = await rejection(runHandler(digest, { path: "d2" }, named.ctx));
    expect(CapabilityError.is(refused) && refused.code).toBe("unreadable_files");
    expect(named.diagnostics().filter((d) => d.code === "name_not_utf8").map((d) => d.file).sort()).toEqual(["d2/bad\uFFFDdir", "d2/link\uFFFD"]);
  });

  test.skipIf(spawnSync("sha256sum", ["--version"]).status !== 0)("files.digest writes a manifest sha256sum -c accepts", async () => {
    const t = createTestContext({ root });
    const output = await runHandler(digest, {}, t.ctx);
    await writeFile(join(root, "manifest.sha256"), output.manifest);
    const check = spawnSync("sha256sum", ["-c", "manifest.sha256"], { cwd: root, encoding: "utf8" });
    expect(check.stdout).toContain("src/b.ts: OK");
    expect(check.status).toBe(0);
  });

  test("files.digest skips a symbolic link leading outside the checkout, with a warning", async () => {
    const outside = await realpath(await mkdtemp(join(tmpdir(), "docket-outside-")));
    try {
      await writeFile(join(outside, "secret.txt"), "secret");
      await symlink(join(outside, "secret.txt"), join(root, "link.txt"));
      await symlink("a.txt", join(root, "inside-link.txt"));
      const t = createTestContext({ root });
      const output = await runHandler(digest, {}, t.ctx);
      expect(output.manifest).not.toMatch(/  link\.txt\n/);
      expect(output.manifest).toContain(`${sha("alpha\n")}  inside-link.txt\n`);
      expect(t.diagnostics()).toEqual([expect.objectContaining({ severity: "warning", file: "link.txt" })]);
    } finally {
      await removeCheckout(outside);
    }
  });

  test("sha256File with inside refuses a file a symbolic link leading outside stands for, as a link swapped in after resolveInside would (foundation tester, session 50)", async () => {
    const outside = await realpath(await mkdtemp(join(tmpdir(), "docket-outside-")));
    try {
      await writeFile(join(outside, "secret.txt"), "secret");
      await symlink(join(outside, "secret.txt"), join(root, "swapped.txt"));
      const refused = await rejection(sha256File(join(root, "swapped.txt"), undefined, { label: "swapped.txt", inside: root }));
      expect(CapabilityError.is(refused) && [refused.code, refused.message]).toEqual(["invalid_input", "swapped.txt leads outside the checkout through a symbolic link; it was not read"]);
      // Inside, through a link or not, it is read.
      await symlink("a.txt", join(root, "inside-link.txt"));
      expect(await sha256File(join(root, "inside-link.txt"), undefined, { inside: root })).toEqual({ hex: sha("alpha\n"), bytes: 6 });
    } finally {
      await removeCheckout(outside);
    }
  });

  test.skipIf(process.platform !== "linux")("files.digest never hashes a file outside the checkout while a link to it is swapped in and out of the path's place (foundation tester, session 50: /etc/passwd's digest was returned)", async () => {
    const outside = await realpath(await mkdtemp(join(tmpdir(), "docket-outside-")));
    await writeFile(join(outside, "secret.txt"), "the secret outside\n");
    await writeFile(join(root, "real.txt"), "inside\n");
    await writeFile(join(root, "target"), "inside\n");
    // Swaps `target` between a regular file and a link leading outside, each by a rename, for at most 20 s.
    const swapper = Bun.spawn(["bash", "-c", `end=$((SECONDS+20)); while [ $SECONDS -lt $end ]; do ln -sfn ${JSON.stringify(join(outside, "secret.txt"))} t.lnk && mv -T t.lnk target; cp real.txt t.reg && mv -T t.reg target; done`], { cwd: root, stdout: "ignore", stderr: "ignore" });
    try {
      const seen = new Set<string>();
      for (let i = 0; i < 400; i++) {
        const t = createTestContext({ root });
        const output = await runHandler(digest, { path: "target" }, t.ctx).catch((error) => ({ manifest: `refused: ${(error as Error).message}` }));
        seen.add(String(output.manifest).slice(0, 64));
      }
      expect([...seen].filter((line) => line === sha("the secret outside\n"))).toEqual([]);
    } finally {
      swapper.kill();
      await swapper.exited;
      await removeCheckout(outside);
    }
  }, 60_000);

  test.skipIf(process.platform !== "linux")("files.digest never lists a folder outside the checkout while a link to it is swapped in and out of a folder's place during the walk (checking tester, session 50: outside names in the diagnostics)", async () => {
    const outside = await realpath(await mkdtemp(join(tmpdir(), "docket-outside-")));
    await mkdir(join(outside, "secretdir"));
    await writeFile(join(outside, "secretdir", "SECRET-NAME.txt"), "x\n");
    await mkdir(join(root, "w", "s"), { recursive: true });
    await writeFile(join(root, "w", "s", "inside.txt"), "in\n");
    // Folders beside it, walked between its listing and its reading: the window a swap needs.
    for (let i = 0; i < 300; i++) await mkdir(join(root, "w", `d${i}`));
    // Swaps w/s between its folder and a link leading outside, each by a rename, for at most 20 s.
    const swapper = Bun.spawn(["bash", "-c", `end=$((SECONDS+20)); while [ $SECONDS -lt $end ]; do mv -T w/s w/.s && ln -s ${JSON.stringify(outside)} w/s; rm -f w/s && mv -T w/.s w/s; done`], { cwd: root, stdout: "ignore", stderr: "ignore" });
    try {
      const said: string[] = [];
      for (let i = 0; i < 40; i++) {
        const t = createTestContext({ root });
        const output = await runHandler(digest, { path: "w" }, t.ctx).catch((error) => ({ manifest: `refused: ${(error as Error).message} ${JSON.stringify((error as CapabilityError).context ?? {})}` }));
        said.push(String(output.manifest), JSON.stringify(t.diagnostics()));
      }
      expect(said.filter((text) => text.includes("SECRET-NAME") || text.includes("secretdir"))).toEqual([]);
    } finally {
      swapper.kill();
      await swapper.exited;
      await removeCheckout(outside);
    }
  }, 60_000);

  for (const [name, path] of [
    ["a .. escape", "../"],
    ["an absolute path", "/etc"],
    ["a path that climbs back out", "src/../../x"],
  ] as const) {
    test(`files.digest refuses ${name} as invalid_input naming the path`, async () => {
      const t = createTestContext({ root });
      const error = await rejection(runHandler(digest, { path }, t.ctx));
      expect(CapabilityError.is(error)).toBe(true);
      expect((error as CapabilityError).code).toBe("invalid_input");
      expect((error as CapabilityError).message).toContain(`input.path ${JSON.stringify(path)}`);
    });
  }

  test("files.digest of a path that does not exist is not_found naming the field, not an internal failure", async () => {
    const t = createTestContext({ root });
    for (const path of ["missing", "a.txt/below"]) {
      const error = (await rejection(runHandler(digest, { path }, t.ctx))) as CapabilityError;
      expect(CapabilityError.is(error)).toBe(true);
      expect(error.code).toBe("not_found");
      expect(error.message).toContain(`input.path ${JSON.stringify(path)} does not exist`);
      expect(error.context).toEqual({ field: "path", path });
    }
  });

  test("files.digest refuses a path through a symbolic link leading outside", async () => {
    const outside = await realpath(await mkdtemp(join(tmpdir(), "docket-outside-")));
    try {
      await symlink(outside, join(root, "out"));
      const t = createTestContext({ root });
      const error = (await rejection(runHandler(digest, { path: "out" }, t.ctx))) as CapabilityError;
      expect(error.code).toBe("invalid_input");
      expect(error.message).toContain("symbolic link");
    } finally {
      await removeCheckout(outside);
    }
  });

  test("files.digest stops when cancelled mid-walk", async () => {
    const t = createTestContext({ root, execution: true, cancelWhen: (e) => e.type === "progress" && e.current === 2 });
    const error = await rejection(runHandler(digest, {}, t.ctx));
    expect(error).toBeInstanceOf(TestCancellation);
    expect(t.progress().length).toBe(2);
    expect(t.artifacts.size).toBe(0);
  });

  test("files.digest declares that it can be cancelled", () => {
    expect(digest.cancellable).toBe(true);
    expect(digest.effect).toBe("read");
  });
});
