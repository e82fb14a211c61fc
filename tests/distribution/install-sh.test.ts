// install.sh against a release folder served on 127.0.0.1: the checked install a user runs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, closeSync, existsSync, linkSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO, cleanEnv, removeTempDirs, tempDir } from "../cli/_harness.ts";
import { testRelease, serveRelease, type BuiltRelease, type ReleaseServer } from "./_release.ts";

const INSTALL_SH = join(REPO, "install.sh");
// An install copies and hashes a ~110 MiB binary: seconds on a machine other suites load too.
const SLOW = 60_000;
// A real full disk: a 4 MiB tmpfs (root may mount one here; elsewhere the test is skipped).
const FULL_DISK = (() => {
  const dir = mkdtempSync(join(tmpdir(), "docket-install-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", dir], { stdio: "ignore" });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
})();
// A read-only folder that root cannot write either: a read-only tmpfs (skipped where none mounts).
const READ_ONLY = (() => {
  const dir = mkdtempSync(join(tmpdir(), "docket-install-ro-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", dir], { stdio: "ignore" });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
})();
let release: BuiltRelease;
let server: ReleaseServer;

beforeAll(async () => {
  release = await testRelease();
  server = serveRelease(release.releaseDir);
}, 180_000);

afterAll(() => {
  server?.stop();
  for (const mounted of [FULL_DISK, READ_ONLY]) {
    if (!mounted) continue;
    execFileSync("umount", ["-l", mounted], { stdio: "ignore" });
    rmSync(mounted, { recursive: true, force: true });
  }
  removeTempDirs();
});

/**
 * Runs install.sh with `sh`, HOME in a temporary folder and only the variables given. SHELL is
 * unset unless given, as in a CI job or a container; `unset` names others to leave out; `cwd`
 * is where it runs (default: this process's).
 */
async function install(args: string[], env: Record<string, string> = {}, unset: string[] = [], cwd?: string) {
  const vars = cleanEnv({ HOME: tempDir("home"), DOCKET_DOWNLOAD_URL: server.url, ...env });
  if (env.SHELL === undefined) delete vars.SHELL;
  for (const name of unset) delete vars[name];
  const child = Bun.spawn(["sh", INSTALL_SH, ...args], {
    env: vars,
    cwd,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

/** A folder whose `uname` says what a test wants, put first on PATH. */
function fakeUname(system: string, machine: string): string {
  const dir = tempDir("uname");
  writeFileSync(join(dir, "uname"), `#!/bin/sh\ncase "$1" in -s) echo ${system} ;; -m) echo ${machine} ;; *) echo ${system} ;; esac\n`);
  chmodSync(join(dir, "uname"), 0o755);
  return `${dir}:${process.env.PATH}`;
}

/** A PATH of one folder holding every command this one's PATH finds, but for those named. */
function pathWithout(...missing: string[]): string {
  const dir = tempDir("tools");
  const seen = new Set(missing);
  for (const entry of (process.env.PATH ?? "").split(":")) {
    if (!entry.startsWith("/")) continue;
    let names: string[];
    try {
      names = readdirSync(entry);
    } catch {
      continue;
    }
    for (const name of names) {
      if (seen.has(name)) continue;
      seen.add(name);
      symlinkSync(join(entry, name), join(dir, name));
    }
  }
  return dir;
}

/**
 * A release server that cuts every binary off after its first MiB, having announced its full
 * length, and closes the connection: SHA256SUMS comes whole.
 */
async function serveCutOff(dir: string): Promise<ReleaseServer> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let head = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      socket.off("data", onData);
      const name = decodeURIComponent(head.split(" ")[1]!.slice(1));
      requests.push(name);
      const path = join(dir, name);
      if (name.includes("/") || !existsSync(path)) {
        socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
      }
      const size = statSync(path).size;
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${size}\r\nContent-Type: application/octet-stream\r\n\r\n`);
      if (name === "SHA256SUMS") {
        socket.end(readFileSync(path));
        return;
      }
      const first = Buffer.alloc(Math.min(size, 1 << 20));
      const fd = openSync(path, "r");
      try {
        readSync(fd, first, 0, first.length, 0);
      } finally {
        closeSync(fd);
      }
      socket.write(first, () => socket.destroy());
    };
    socket.on("data", onData);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    stop: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/**
 * A release server that trickles: it announces 100 MB and sends 256 bytes every 125 ms (2 KiB/s,
 * above curl's 1 KiB/s stall limit), for SHA256SUMS when `sums` says so, else for the binaries
 * only (SHA256SUMS then comes whole from `dir`).
 */
async function serveTrickle(dir: string, sums: boolean): Promise<ReleaseServer> {
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setInterval>>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    socket.once("data", (chunk: Buffer) => {
      const name = decodeURIComponent(chunk.toString("latin1").split(" ")[1]!.slice(1).split("?")[0]!);
      if (name === "SHA256SUMS" && !sums) {
        const body = readFileSync(join(dir, name));
        socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`), body]));
        return;
      }
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\nContent-Type: application/octet-stream\r\n\r\n");
      // At most a minute of trickle: the test ends long before.
      let sent = 0;
      const timer = setInterval(() => {
        if (++sent > 480 || socket.destroyed) return void (clearInterval(timer), timers.delete(timer), socket.destroy());
        socket.write(Buffer.alloc(256, 48));
      }, 125);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: [],
    stop: () => {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** A release folder of one fake binary (a shell script that prints a version) for `target`. */
function fakeRelease(target: string): { dir: string; file: string } {
  const dir = tempDir("fake-release");
  const file = `docket-${release.manifest.version}-${target}`;
  const body = `#!/bin/sh\necho "docket ${release.manifest.version} (commit fake, ${target})"\n`;
  writeFileSync(join(dir, file), body);
  writeFileSync(join(dir, "SHA256SUMS"), `${createHash("sha256").update(body).digest("hex")}  ${file}\n`);
  return { dir, file };
}

describe("install.sh", () => {
  test("install.sh installs the checked binary into --dir, runs it, and says how to put it on PATH", async () => {
    const dir = join(tempDir("bin"), "nested", "bin");
    const result = await install(["--dir", dir]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Downloading docket ${release.manifest.version} for linux-x64 from ${server.url}`);
    expect(result.stdout).toContain(`Installed ${dir}/docket: docket ${release.manifest.version} (commit ${release.manifest.commit}, linux-x64)`);
    expect(result.stdout).toContain(`${dir} is not on your PATH`);
    expect(result.stdout).toContain(`export PATH="${dir}:$PATH"`);
    expect(readdirSync(dir)).toEqual(["docket"]);
    const ran = Bun.spawnSync([join(dir, "docket"), "--version"]);
    expect(ran.stdout.toString()).toBe(`docket ${release.manifest.version} (commit ${release.manifest.commit}, linux-x64)\n`);
  }, SLOW);

  test("install.sh defaults to ~/.local/bin and stays quiet about PATH when the folder is on it", async () => {
    const home = tempDir("home");
    const result = await install([], { HOME: home, PATH: `${home}/.local/bin:${process.env.PATH}` });
    expect(result.code).toBe(0);
    expect(existsSync(join(home, ".local", "bin", "docket"))).toBe(true);
    expect(result.stdout).not.toContain("not on your PATH");
  }, SLOW);

  test("install.sh names the rc file of the user's shell, and needs neither SHELL nor HOME with --dir", async () => {
    const home = tempDir("home");
    const zsh = await install(["--dir", tempDir("bin")], { HOME: home, SHELL: "/usr/bin/zsh" });
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toContain(`>> ${home}/.zshrc`);
    const bash = await install(["--dir", tempDir("bin")], { HOME: home, SHELL: "/bin/bash" });
    expect(bash.stdout).toContain(`>> ${home}/.bashrc`);
    const fish = await install(["--dir", tempDir("bin")], { SHELL: "/usr/local/bin/fish" });
    expect(fish.stdout).toMatch(/fish_add_path \S+/);
    const bare = await install(["--dir", tempDir("bin")], {}, ["HOME"]);
    expect(bare.stderr).toBe("");
    expect(bare.code).toBe(0);
    expect(bare.stdout).toContain(">> ~/.profile");
  }, SLOW);

  test("install.sh refuses a folder named docket where the binary goes, before downloading anything, and leaves that folder as it was", async () => {
    const dir = tempDir("bin");
    mkdirSync(join(dir, "docket"));
    writeFileSync(join(dir, "docket", "keep.txt"), "mine");
    const asked = server.requests.length;
    const result = await install(["--dir", dir]);
    expect(result.code).toBe(1);
    expect(result.stdout).not.toContain("Installed");
    expect(result.stderr).toContain(`${dir}/docket is a folder, so docket cannot be installed as ${dir}/docket; nothing was installed`);
    expect(server.requests.slice(asked)).toEqual([]);
    expect(readdirSync(join(dir, "docket"))).toEqual(["keep.txt"]);
    expect(readdirSync(dir)).toEqual(["docket"]);
  }, SLOW);

  test("install.sh names the folder by its absolute path: a relative --dir is advised as absolute, and one on PATH with or without a trailing slash is on PATH", async () => {
    const work = tempDir("work");
    const relative = await install(["--dir", "./relbin"], {}, [], work);
    expect(relative.code).toBe(0);
    expect(relative.stdout).toContain(`Installed ${work}/relbin/docket:`);
    expect(relative.stdout).toContain(`export PATH="${work}/relbin:$PATH"`);
    expect(relative.stdout).not.toContain("./relbin");

    const dir = tempDir("bin");
    const slashed = await install(["--dir", `${dir}/`], { PATH: `${dir}:${process.env.PATH}` });
    expect(slashed.code).toBe(0);
    expect(slashed.stdout).toContain(`Installed ${dir}/docket:`);
    expect(slashed.stdout).not.toContain("not on");
    const onPathSlashed = await install(["--dir", dir], { PATH: `${process.env.PATH}:${dir}//` });
    expect(onPathSlashed.stdout).not.toContain("not on");
  }, SLOW);

  test("install.sh counts the folder on PATH when an entry reaches it through a symbolic link, either way, or is written with a doubled slash", async () => {
    const base = tempDir("bin");
    mkdirSync(join(base, "real"));
    symlinkSync(join(base, "real"), join(base, "link"));
    const viaLink = await install(["--dir", join(base, "link")], { PATH: `${join(base, "real")}:${process.env.PATH}` });
    expect(viaLink.code).toBe(0);
    expect(viaLink.stdout).toContain(`Installed ${base}/link/docket:`);
    expect(viaLink.stdout).not.toContain("not on");
    const toLink = await install(["--dir", join(base, "real")], { PATH: `${join(base, "link")}:${process.env.PATH}` });
    expect(toLink.stdout).not.toContain("not on");
    const doubled = await install(["--dir", join(base, "inst", "e5")], { PATH: `${process.env.PATH}:${base}/inst//e5` });
    expect(doubled.code).toBe(0);
    expect(doubled.stdout).not.toContain("not on");
  }, SLOW);

  test("install.sh names the other docket that comes first on PATH, which `docket` by name still runs", async () => {
    const old = tempDir("old");
    writeFileSync(join(old, "docket"), "#!/bin/sh\necho the old docket\n", { mode: 0o755 });
    const dir = tempDir("bin");
    const behind = await install(["--dir", dir], { PATH: `${old}:${dir}:${process.env.PATH}` });
    expect(behind.code).toBe(0);
    expect(behind.stdout).toContain(`docket by name still runs ${old}/docket, which comes first on PATH (before ${dir}). Remove that docket, or put ${dir} before its folder on PATH; until then run ${dir}/docket.`);
    const absent = await install(["--dir", tempDir("bin")], { PATH: `${old}:${process.env.PATH}` });
    expect(absent.stdout).toContain("is not on your PATH");
    expect(absent.stdout).toContain(`Until then, docket by name runs ${old}/docket, not this one.`);
    const first = await install(["--dir", dir], { PATH: `${dir}:${old}:${process.env.PATH}` });
    expect(first.stdout).not.toContain("docket by name");
  }, SLOW);

  test("install.sh quotes a folder holding \" $ ' or \\ so that the line it advises writes the folder as it is", async () => {
    /** The line install.sh advises, run by sh (dash: its echo would take a backslash as an escape). */
    const advised = (stdout: string) => stdout.split("\n").find((line) => line.startsWith("  "))!.trim();
    for (const name of [`we"ird $HOME it's`, "back\\slash \\n"]) {
      const dir = join(tempDir("bin"), name);
      const githubPath = join(tempDir("runner"), "path");
      const step = await install(["--dir", dir], { GITHUB_ACTIONS: "true", GITHUB_PATH: githubPath });
      expect(step.code).toBe(0);
      expect(Bun.spawnSync(["sh", "-c", advised(step.stdout)], { env: { PATH: process.env.PATH!, GITHUB_PATH: githubPath } }).exitCode).toBe(0);
      expect(readFileSync(githubPath, "utf8")).toBe(`${dir}\n`);

      const home = tempDir("home");
      const shell = await install(["--dir", dir], { HOME: home, SHELL: "/bin/bash" });
      expect(Bun.spawnSync(["sh", "-c", advised(shell.stdout)]).exitCode).toBe(0);
      const path = Bun.spawnSync(["sh", "-c", `. ${home}/.bashrc && printf %s "$PATH"`], { env: { PATH: "/usr/bin:/bin" } }).stdout.toString();
      expect(path).toBe(`${dir}:/usr/bin:/bin`);
    }
    // A HOME holding a space and a quote: the line appends to its rc file, not to a file named by its first word (hostile tester, session 38).
    const spaced = join(tempDir("home"), "inst home's");
    mkdirSync(spaced);
    const dir = join(tempDir("bin"), "bin dir");
    const shell = await install(["--dir", dir], { HOME: spaced, SHELL: "/bin/bash" });
    expect(Bun.spawnSync(["sh", "-c", advised(shell.stdout)], { cwd: tempDir("cwd") }).exitCode).toBe(0);
    expect(readFileSync(join(spaced, ".bashrc"), "utf8")).toBe(`export PATH="${dir}:$PATH"\n`);
    // And the command it says to run until then runs (checking tester).
    const untilThen = shell.stdout.split("\n").find((line) => line.includes("Until then: "))!.replace(/^.*Until then: /, "");
    expect(Bun.spawnSync(["sh", "-c", untilThen]).exitCode).toBe(0);
    const fish = await install(["--dir", join(tempDir("bin"), "it's \\ here")], { SHELL: "/usr/bin/fish" });
    expect(fish.stdout).toMatch(/fish_add_path '\/\S+\/it\\'s \\\\ here'\n/);
  }, SLOW);

  test("install.sh in a GitHub Actions step says to add the folder to $GITHUB_PATH, never to an rc file", async () => {
    const dir = tempDir("bin");
    const result = await install(["--dir", dir], { GITHUB_ACTIONS: "true", GITHUB_PATH: join(tempDir("runner"), "path"), SHELL: "/bin/bash" });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`echo '${dir}' >> "$GITHUB_PATH"`);
    expect(result.stdout).not.toContain(".bashrc");
  }, SLOW);

  test("install.sh --version pins a release, --resolve names it, and an unreleased version is refused", async () => {
    const dir = tempDir("bin");
    expect((await install(["--version", `v${release.manifest.version}`, "--dir", dir])).code).toBe(0);
    expect(await install(["--resolve"])).toMatchObject({ code: 0, stdout: `${release.manifest.version}\n` });
    const refused = await install(["--version", "9.9.9", "--dir", tempDir("bin")]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${server.url}/SHA256SUMS lists no docket binary for linux-x64 (version 9.9.9)`);
    const odd = await install(["--version", "1.0;rm -rf /"]);
    expect(odd.code).toBe(1);
    expect(odd.stderr).toContain("is not a version");
  }, SLOW);

  test("install.sh refuses a tampered binary and leaves the docket already installed in place", async () => {
    const dir = tempDir("bin");
    expect((await install(["--dir", dir])).code).toBe(0);
    const before = readFileSync(join(dir, "docket"));

    // The release page serves another file under the binary's name; SHA256SUMS is the real one.
    const tampered = tempDir("tampered");
    linkSync(join(release.releaseDir, "SHA256SUMS"), join(tampered, "SHA256SUMS"));
    writeFileSync(join(tampered, release.manifest.artifacts[0]!.file), "#!/bin/sh\necho pwned\n");
    const evil = serveRelease(tampered);
    try {
      const result = await install(["--dir", dir], { DOCKET_DOWNLOAD_URL: evil.url });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`checksum mismatch for ${release.manifest.artifacts[0]!.file}: SHA256SUMS says ${release.manifest.artifacts[0]!.sha256}`);
      expect(result.stderr).toContain("Nothing was installed");
    } finally {
      evil.stop();
    }
    expect(readdirSync(dir)).toEqual(["docket"]);
    expect(readFileSync(join(dir, "docket")).equals(before)).toBe(true);
  }, SLOW);

  test("install.sh reads a SHA256SUMS written with CRLF line ends and sha256sum's binary-mode star", async () => {
    const crlf = tempDir("crlf");
    const artifact = release.manifest.artifacts[0]!;
    linkSync(join(release.releaseDir, artifact.file), join(crlf, artifact.file));
    writeFileSync(join(crlf, "SHA256SUMS"), `${artifact.sha256.toUpperCase()} *${artifact.file}\r\n`);
    const mirror = serveRelease(crlf);
    try {
      const dir = tempDir("bin");
      const result = await install(["--dir", dir], { DOCKET_DOWNLOAD_URL: mirror.url });
      expect(result.stderr).toBe("");
      expect(readdirSync(dir)).toEqual(["docket"]);
    } finally {
      mirror.stop();
    }
  }, SLOW);

  test.skipIf(!FULL_DISK)("install.sh on a full disk says it cannot write, leaves no partial file and keeps the docket already there", async () => {
    const before = "#!/bin/sh\necho the docket installed before\n";
    writeFileSync(join(FULL_DISK!, "docket"), before, { mode: 0o755 });
    const result = await install(["--dir", FULL_DISK!]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot write into ${FULL_DISK}`);
    expect(readdirSync(FULL_DISK!)).toEqual(["docket"]);
    expect(readFileSync(join(FULL_DISK!, "docket"), "utf8")).toBe(before);
  }, SLOW);

  test("install.sh refuses an unknown operating system or processor before downloading anything", async () => {
    const asked = server.requests.length;
    const bsd = await install(["--dir", tempDir("bin")], { PATH: fakeUname("FreeBSD", "amd64") });
    expect(bsd.code).toBe(1);
    expect(bsd.stderr).toContain('docket has no binary for the operating system "FreeBSD" (uname -s)');
    const riscv = await install(["--dir", tempDir("bin")], { PATH: fakeUname("Linux", "riscv64") });
    expect(riscv.code).toBe(1);
    expect(riscv.stderr).toContain('docket has no binary for the processor "riscv64" (uname -m)');
    expect(server.requests.length).toBe(asked);
  }, SLOW);

  test("install.sh names the platform's file: macOS arm64 is darwin-arm64, Git Bash on arm64 windows-arm64, and a missing one is refused", async () => {
    const mac = await install(["--dir", tempDir("bin")], { PATH: fakeUname("Darwin", "arm64") });
    expect(mac.code).toBe(1);
    expect(mac.stderr).toContain("lists no docket binary for darwin-arm64");
    const gitBash = await install(["--dir", tempDir("bin")], { PATH: fakeUname("MINGW64_NT-10.0-26100", "aarch64") });
    expect(gitBash.stderr).toContain("lists no docket binary for windows-arm64");
  }, SLOW);

  test("install.sh bounds a download that trickles just fast enough to go on: a SHA256SUMS past 1 MiB is refused at once, a binary past DOCKET_DOWNLOAD_SECONDS ends (distribution tester, session 49)", async () => {
    const fake = fakeRelease("linux-x64");
    const sums = await serveTrickle(fake.dir, true);
    const binary = await serveTrickle(fake.dir, false);
    try {
      const refused = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: sums.url, PATH: fakeUname("Linux", "x86_64") });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`cannot download ${sums.url}/SHA256SUMS (curl: (63)`);
      const dir = tempDir("bin");
      const slow = await install(["--dir", dir], { DOCKET_DOWNLOAD_URL: binary.url, DOCKET_DOWNLOAD_SECONDS: "2", PATH: fakeUname("Linux", "x86_64") });
      expect(slow.code).toBe(1);
      // curl's own bound or `timeout`'s, whichever comes first: the two are the same seconds.
      expect(slow.stderr).toMatch(new RegExp(`cannot download ${binary.url}/${fake.file} \\((curl: \\(28\\)|it took longer than 2 seconds)`));
      expect(readdirSync(dir)).toEqual([]);
      // Streamed with no length announced: cut as it comes, and refused (checking tester, session 49: 300 MB reached TMPDIR first).
      const streamed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(new ReadableStream({ pull(controller) { controller.enqueue(new Uint8Array(64 * 1024).fill(48)); } })) });
      try {
        const cut = await install(["--resolve"], { DOCKET_DOWNLOAD_URL: `http://127.0.0.1:${streamed.port}` });
        expect(cut.code).toBe(1);
        expect(cut.stderr).toContain("(it is larger than 1048576 bytes)");
      } finally {
        streamed.stop(true);
      }
      const odd = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: binary.url, DOCKET_DOWNLOAD_SECONDS: "10m" });
      expect(odd.code).toBe(1);
      expect(odd.stderr).toContain('DOCKET_DOWNLOAD_SECONDS must be a whole number of seconds from 1 to 86400, like 1800; got "10m"');
    } finally {
      sums.stop();
      binary.stop();
    }
  }, SLOW);

  test("install.sh prints no user, password or query of DOCKET_DOWNLOAD_URL, keeps the query after each file's name (a signed address), and reads ~/.netrc (distribution tester, session 49)", async () => {
    const dir = tempDir("bin");
    const withSecrets = server.url.replace("http://", "http://deploy:S3cretT0ken@") + "/?token=S3cretQuery";
    const installed = await install(["--dir", dir], { DOCKET_DOWNLOAD_URL: withSecrets });
    expect(installed.code).toBe(0);
    expect(installed.stdout).toContain(`from http://…@${server.url.slice("http://".length)}?…`);
    const failed = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: withSecrets.replace("/?", "/nosuch?") });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(`cannot download http://…@${server.url.slice("http://".length)}/nosuch/SHA256SUMS?…`);
    // Without a scheme (curl takes it for http), with an @ in the password, or an address the tool cannot parse (it repeats it).
    const host = server.url.slice("http://".length);
    const bare = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: `deploy:S3cretT0ken@${host}/` });
    expect(bare.code).toBe(0);
    expect(bare.stdout).toContain(`from …@${host}`);
    const at = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: `http://deploy:p@S3cret@${host}/` });
    const unparsed = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: `http://deploy:S3cret@127.0.0.1:99999/rel?token=S3cretQuery#frag` });
    expect(unparsed.code).toBe(1);
    // A / in the password (base64), a space before the address (a quoted YAML value).
    const slash = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: `http://usr:pa/S3cret8@${host}/nope` });
    const spaced = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: ` http://usr:S3cret11@${host}/nope` });
    for (const text of [installed.stdout, installed.stderr, failed.stdout, failed.stderr, bare.stdout, bare.stderr, at.stdout, at.stderr, unparsed.stdout, unparsed.stderr, slash.stderr, spaced.stderr]) {
      expect(text.includes("S3cret")).toBe(false);
    }
    expect(readFileSync(INSTALL_SH, "utf8")).toContain("--netrc-optional");
  }, SLOW);

  test("install.sh's latest is the highest version SHA256SUMS lists for the machine, a release above its pre-release, not the first line (distribution tester, session 49)", async () => {
    const dir = tempDir("multi");
    const lines = ["0.1.0", "0.10.0-rc.1", "0.2.0", "0.10.0", "0.9.9"].map((v) => `${"a".repeat(64)}  docket-${v}-linux-x64`);
    writeFileSync(join(dir, "SHA256SUMS"), `${lines.join("\n")}\n${"b".repeat(64)}  docket-0.11.0-darwin-arm64\n`);
    const mirror = serveRelease(dir);
    try {
      expect(await install(["--resolve"], { DOCKET_DOWNLOAD_URL: mirror.url, PATH: fakeUname("Linux", "x86_64") })).toMatchObject({ code: 0, stdout: "0.10.0\n" });
      // Pre-releases as semver orders them (checking tester, session 49): rc.10 above rc.2.
      writeFileSync(join(dir, "SHA256SUMS"), `${"a".repeat(64)}  docket-1.0.0-rc.2-linux-x64\n${"a".repeat(64)}  docket-1.0.0-rc.10-linux-x64\n${"a".repeat(64)}  docket-0.9.0-linux-x64\n`);
      expect(await install(["--resolve"], { DOCKET_DOWNLOAD_URL: mirror.url, PATH: fakeUname("Linux", "x86_64") })).toMatchObject({ code: 0, stdout: "1.0.0-rc.10\n" });
      // Build metadata is no pre-release; names that are no version (v2.0.0, 1e3.0.0, 0x10.0.0) are passed over; numbers past awk's are compared digit by digit.
      const names = ["1.0.0-rc.1", "1.0.0+build-5", "v2.0.0", "1e3.0.0", "0x10.0.0", "..", "99999999999999999998.0.0", "99999999999999999999.0.0"];
      writeFileSync(join(dir, "SHA256SUMS"), names.map((v) => `${"a".repeat(64)}  docket-${v}-linux-x64\n`).join(""));
      expect(await install(["--resolve"], { DOCKET_DOWNLOAD_URL: mirror.url, PATH: fakeUname("Linux", "x86_64") })).toMatchObject({ code: 0, stdout: "99999999999999999999.0.0\n" });
      writeFileSync(join(dir, "SHA256SUMS"), ["1.0.0-rc.1", "1.0.0+build-5", "v2.0.0", ".."].map((v) => `${"a".repeat(64)}  docket-${v}-linux-x64\n`).join(""));
      expect(await install(["--resolve"], { DOCKET_DOWNLOAD_URL: mirror.url, PATH: fakeUname("Linux", "x86_64") })).toMatchObject({ code: 0, stdout: "1.0.0+build-5\n" });
    } finally {
      mirror.stop();
    }
  }, SLOW);

  test("install.sh says which address failed when the release cannot be downloaded", async () => {
    const gone = serveRelease(tempDir("empty"));
    gone.stop();
    const result = await install(["--dir", tempDir("bin")], { DOCKET_DOWNLOAD_URL: `${gone.url}/` });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot download ${gone.url}/SHA256SUMS`);
  }, SLOW);

  test("install.sh refuses an empty --dir, takes --dir=~/bin as the home folder's, and falls back to /tmp when TMPDIR cannot hold its download (distribution tester, session 41)", async () => {
    const empty = await install(["--dir", ""]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("--dir is empty; name the folder to install into");
    const home = tempDir("home");
    const cwd = tempDir("cwd");
    const tilde = await install(["--dir=~/bin"], { HOME: home, TMPDIR: join(cwd, "no", "such", "folder") }, [], cwd);
    expect(tilde.stderr).toBe("");
    expect(tilde.code).toBe(0);
    expect(existsSync(join(home, "bin", "docket"))).toBe(true);
    expect(existsSync(join(cwd, "~"))).toBe(false);
    // ~user is refused, naming what to give: it made a folder named ~root under the current one.
    const other = await install(["--dir=~root/bin"], { HOME: home }, [], cwd);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("--dir ~root/bin begins with a ~ that install.sh does not expand (only ~ and ~/… are the home folder); give --dir as a full path");
    // The shell's ~+ is no user's home, and a variable is named as the variable (checking tester, session 42).
    expect((await install(["--dir=~+/bin"], { HOME: home }, [], cwd)).stderr).toContain("--dir ~+/bin begins with a ~ that install.sh does not expand");
    const variable = await install([], { HOME: home, DOCKET_INSTALL_DIR: "~alice/bin" }, [], cwd);
    expect(variable.code).toBe(1);
    expect(variable.stderr).toContain("DOCKET_INSTALL_DIR ~alice/bin begins with a ~ that install.sh does not expand (only ~ and ~/… are the home folder); give DOCKET_INSTALL_DIR as a full path");
    const homeless = await install([], { HOME: "", DOCKET_INSTALL_DIR: "~/bin" }, [], cwd);
    expect(homeless.code).toBe(1);
    expect(homeless.stderr).toContain("HOME is not set, so ~/bin names no folder; give DOCKET_INSTALL_DIR as a full path");
    expect(readdirSync(cwd)).toEqual([]);
  }, SLOW);

  test("install.sh whose reader goes away (| head -1) leaves no download in TMPDIR (checking tester, session 41)", async () => {
    const tmp = tempDir("tmp");
    const dir = tempDir("bin");
    const child = Bun.spawn(["sh", "-c", `sh "$0" --dir "$1" | head -1`, INSTALL_SH, dir], {
      env: { ...cleanEnv({ HOME: tempDir("home"), DOCKET_DOWNLOAD_URL: server.url }), TMPDIR: tmp },
      stdout: "pipe",
      stderr: "pipe",
    });
    await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    // The shell may still be cleaning up a moment after head ended.
    for (let i = 0; i < 50 && readdirSync(tmp).length > 0; i++) await Bun.sleep(100);
    expect(readdirSync(tmp)).toEqual([]);
  }, SLOW);

  test("install.sh refuses an unknown argument with its usage", async () => {
    const result = await install(["--frobnicate"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Usage: install.sh");
    expect(result.stderr).toContain('unknown argument "--frobnicate"');
  }, SLOW);

  test("install.sh on macOS names the file bash reads in a new terminal: ~/.bash_profile, or the ~/.bash_login or ~/.profile it already reads (hostile tester)", async () => {
    const { dir: releaseDir } = fakeRelease("darwin-arm64");
    const mirror = serveRelease(releaseDir);
    try {
      const mac = (home: string) => install(["--dir", tempDir("bin")], { HOME: home, SHELL: "/bin/bash", PATH: fakeUname("Darwin", "arm64"), DOCKET_DOWNLOAD_URL: mirror.url });
      // Terminal opens a login shell, which reads ~/.bash_profile and never ~/.bashrc.
      const bare = tempDir("home");
      const fresh = await mac(bare);
      expect(fresh.stderr).toBe("");
      expect(fresh.code).toBe(0);
      expect(fresh.stdout).toContain(`>> ${bare}/.bash_profile`);
      expect(fresh.stdout).not.toContain(".bashrc");
      // A ~/.bash_profile made beside an existing ~/.profile would hide that one from bash.
      const withProfile = tempDir("home");
      writeFileSync(join(withProfile, ".profile"), "");
      expect((await mac(withProfile)).stdout).toContain(`>> ${withProfile}/.profile`);
      const withLogin = tempDir("home");
      writeFileSync(join(withLogin, ".profile"), "");
      writeFileSync(join(withLogin, ".bash_login"), "");
      expect((await mac(withLogin)).stdout).toContain(`>> ${withLogin}/.bash_login`);
      const withBoth = tempDir("home");
      writeFileSync(join(withBoth, ".profile"), "");
      writeFileSync(join(withBoth, ".bash_profile"), "");
      expect((await mac(withBoth)).stdout).toContain(`>> ${withBoth}/.bash_profile`);
      // zsh reads ~/.zshrc on macOS too.
      const zsh = await install(["--dir", tempDir("bin")], { HOME: bare, SHELL: "/bin/zsh", PATH: fakeUname("Darwin", "arm64"), DOCKET_DOWNLOAD_URL: mirror.url });
      expect(zsh.stdout).toContain(`>> ${bare}/.zshrc`);
    } finally {
      mirror.stop();
    }
    // On Linux a terminal's bash is interactive, not a login shell: ~/.bashrc, even beside a ~/.bash_profile.
    const home = tempDir("home");
    writeFileSync(join(home, ".bash_profile"), "");
    expect((await install(["--dir", tempDir("bin")], { HOME: home, SHELL: "/bin/bash" })).stdout).toContain(`>> ${home}/.bashrc`);
  }, SLOW);

  test("install.sh cut short (a download broken off, piped into sh) does nothing and fails, at any line and mid-line (hostile tester)", async () => {
    const script = readFileSync(INSTALL_SH);
    const lines = script.toString("latin1").split("\n").length - 1;
    const asked = server.requests.length;
    const base = tempDir("bin");
    const env = cleanEnv({ HOME: tempDir("home"), DOCKET_DOWNLOAD_URL: server.url });
    const cut = async (shell: string, head: string, at: number) => {
      const dir = join(base, `${shell}-${head}-${at}`);
      const child = Bun.spawn(["sh", "-c", `head ${head} "$1" "$0" | ${shell} -s -- --dir "$2"`, INSTALL_SH, String(at), dir], {
        env,
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      return { at, stdout, stderr, code, made: existsSync(dir) };
    };
    const cuts: Array<[string, string, number]> = [];
    // Every line count but the whole (its first line, #!/bin/sh, alone is a script of nothing).
    // sh (dash here) at each one; bash at every tenth.
    for (let at = 2; at < lines; at++) cuts.push(["sh", "-n", at]);
    for (let at = 2; at < lines; at += 10) cuts.push(["bash", "-n", at]);
    // Cut inside a line, every 997 bytes, and short of the last line's closing brace.
    for (let at = 997; at < script.length; at += 997) cuts.push(["sh", "-c", at]);
    cuts.push(["sh", "-c", script.length - 2], ["bash", "-c", script.length - 2]);
    const results = [];
    for (let i = 0; i < cuts.length; i += 16) results.push(...(await Promise.all(cuts.slice(i, i + 16).map(([shell, head, at]) => cut(shell, head, at)))));
    expect(results.length).toBeGreaterThan(lines);
    const ran = results.filter((r) => r.code === 0 || r.stdout !== "" || r.made);
    expect(ran.map((r) => `${r.at}: exit ${r.code}, ${JSON.stringify(r.stdout.slice(0, 80))}`)).toEqual([]);
    expect(results.every((r) => /syntax error|Syntax error|unexpected/.test(r.stderr))).toBe(true);
    expect(server.requests.length).toBe(asked);
    // The first line alone runs nothing either.
    const shebang = await cut("sh", "-n", 1);
    expect({ stdout: shebang.stdout, made: shebang.made }).toEqual({ stdout: "", made: false });
    expect(server.requests.length).toBe(asked);
  }, SLOW);

  test.skipIf(Bun.which("busybox") === null)("install.sh installs with BusyBox's tools alone (its wget takes no GNU option), and from a folder deleted under it (distribution tester, session 47)", async () => {
    const tools = tempDir("busybox");
    execFileSync(Bun.which("busybox")!, ["--install", "-s", tools]);
    const dir = join(tempDir("bin"), "bin");
    const result = await install(["--dir", dir], { PATH: tools });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Installed ${dir}/docket: docket ${release.manifest.version}`);
    // Its errors are said as it words them.
    const missing = await install(["--dir", dir], { PATH: tools, DOCKET_DOWNLOAD_URL: `${server.url}/nothing-here` });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("server returned error");
    // From a folder that is gone, the binary still runs its check (Bun refuses a deleted working folder).
    const gone = tempDir("gone");
    const deleted = join(gone, "here");
    mkdirSync(deleted);
    const child = Bun.spawn(["sh", "-c", `cd "$1" && rmdir "$1" && exec sh "$2" --dir "$3"`, "sh", deleted, INSTALL_SH, join(tempDir("bin"), "bin")], { env: cleanEnv({ HOME: tempDir("home"), DOCKET_DOWNLOAD_URL: server.url }), stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    // (dash itself notes the missing folder on stderr as it starts.)
    expect(stderr).not.toContain("does not run here");
    expect(code).toBe(0);
    expect(stdout).toContain("Installed ");
  }, SLOW);

  for (const tool of ["wget", "curl"] as const) {
    test.skipIf(Bun.which(tool) === null)(`install.sh with ${tool} gives up on a download cut off halfway after a few tries, in seconds, and says why (hostile tester)`, async () => {
      const cutOff = await serveCutOff(release.releaseDir);
      const file = release.manifest.artifacts[0]!.file;
      const dir = join(tempDir("bin"), "new", "bin");
      try {
        const started = Date.now();
        const result = await install(["--dir", dir], { DOCKET_DOWNLOAD_URL: cutOff.url, PATH: pathWithout(...(tool === "wget" ? ["curl"] : ["wget"])) });
        const took = Date.now() - started;
        expect(result.code).toBe(1);
        expect(result.stdout).toContain("Downloading docket");
        const said = result.stderr.split("\n").find((line) => line.startsWith("docket install: "));
        if (tool === "wget") expect(said).toMatch(new RegExp(`^docket install: cannot download ${cutOff.url}/${file} \\(Connection closed at byte 1048576\\. Giving up\\.\\)$`));
        else expect(said).toMatch(new RegExp(`^docket install: cannot download ${cutOff.url}/${file} \\(curl: \\(18\\) transfer closed with \\d+ bytes remaining to read\\)$`));
        expect(cutOff.requests.filter((name) => name === file).length).toBeLessThanOrEqual(3);
        expect(took).toBeLessThan(30_000);
        // Nothing was installed, and the folders made for it are gone again.
        expect(existsSync(join(dir, "..", ".."))).toBe(true);
        expect(existsSync(join(dir, ".."))).toBe(false);
      } finally {
        cutOff.stop();
      }
    }, SLOW);
  }

  test("install.sh refuses a folder it cannot make or write, and a machine with no sha256 tool, before downloading anything (hostile tester)", async () => {
    const asked = server.requests.length;
    const file = join(tempDir("bin"), "a-file");
    writeFileSync(file, "");
    const underFile = await install(["--dir", join(file, "bin")]);
    expect(underFile.code).toBe(1);
    expect(underFile.stderr).toContain(`cannot create ${file}/bin; name a folder you can write with --dir`);
    expect(underFile.stdout).not.toContain("Downloading");

    const dir = join(tempDir("bin"), "made", "here");
    const noSha = await install(["--dir", dir], { PATH: pathWithout("sha256sum", "shasum", "openssl") });
    expect(noSha.code).toBe(1);
    expect(noSha.stderr).toContain("no sha256sum, shasum or openssl to check the download with; install one (coreutils) and run this again");
    expect(existsSync(join(dir, ".."))).toBe(false);
    expect(server.requests.length).toBe(asked);
    // --resolve checks nothing it does not use.
    expect(await install(["--resolve"], { PATH: pathWithout("sha256sum", "shasum", "openssl") })).toMatchObject({ code: 0, stdout: `${release.manifest.version}\n` });
  }, SLOW);

  test.skipIf(!READ_ONLY)("install.sh refuses a read-only folder before downloading anything (hostile tester)", async () => {
    const asked = server.requests.length;
    const result = await install(["--dir", READ_ONLY!]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot write into ${READ_ONLY}`);
    expect(result.stdout).not.toContain("Downloading");
    expect(server.requests.length).toBe(asked);
  }, SLOW);

  test("install.sh that installs nothing leaves no folder it made for it, and keeps the ones that were there", async () => {
    const tampered = tempDir("tampered");
    linkSync(join(release.releaseDir, "SHA256SUMS"), join(tampered, "SHA256SUMS"));
    writeFileSync(join(tampered, release.manifest.artifacts[0]!.file), "#!/bin/sh\necho pwned\n");
    const evil = serveRelease(tampered);
    try {
      const root = tempDir("bin");
      mkdirSync(join(root, "was-here"));
      const result = await install(["--dir", join(root, "was-here", "a", "b")], { DOCKET_DOWNLOAD_URL: evil.url });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("checksum mismatch");
      expect(readdirSync(root)).toEqual(["was-here"]);
      expect(readdirSync(join(root, "was-here"))).toEqual([]);
      const work = tempDir("work");
      const relative = await install(["--dir", "x/y"], { DOCKET_DOWNLOAD_URL: evil.url }, [], work);
      expect(relative.code).toBe(1);
      expect(readdirSync(work)).toEqual([]);
    } finally {
      evil.stop();
    }
  }, SLOW);

  test.skipIf(Bun.which("shellcheck") === null)("install.sh is shellcheck-clean as POSIX sh", () => {
    const result = Bun.spawnSync(["shellcheck", "--shell=sh", INSTALL_SH]);
    expect(result.stdout.toString()).toBe("");
    expect(result.exitCode).toBe(0);
  }, SLOW);
});
