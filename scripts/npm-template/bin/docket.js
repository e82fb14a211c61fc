#!/usr/bin/env node
// The `docket` command of the npm package: runs the compiled binary that npm installed for this
// machine as the optional dependency @docket/<os>-<arch> (the layout of esbuild and Biome).
// Plain Node, no dependencies: it must run wherever `npx docket` does.
import { spawn } from "node:child_process";
import { accessSync, chmodSync, constants } from "node:fs";
import { createRequire } from "node:module";

// Replaced by scripts/npm-packages.ts with the targets of the release this package belongs to.
const TARGETS = ["@TARGETS@"];

const require = createRequire(import.meta.url);
const target = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`;
const binary = findBinary();
const args = process.argv.slice(2);

// The command docket's hints name (`npx docket run …`, not a `docket` this project has no PATH for).
const env = { ...process.env, DOCKET_COMMAND: "npx docket" };

if (typeof process.execve === "function" && process.platform !== "win32") {
  // Node ≥ 22.15 replaces this process with the binary: signals, the terminal and the exit code
  // are docket's own, with no Node process left waiting.
  try {
    process.execve(binary, [binary, ...args], env);
  } catch (error) {
    cannotStart(error);
  }
}

// docket stops when this process is gone: killed with SIGKILL, it passes nothing on, and docket
// was left serving its port (runtime/cli/_npm-launcher.ts).
const child = spawn(binary, args, { stdio: "inherit", env: { ...env, DOCKET_LAUNCHER_PID: String(process.pid) } });
// Every signal that asks docket to stop is passed on: this process cannot tell one sent to it alone
// (`kill -INT <pid>`) from one sent to the whole process group (a Ctrl-C, `kill -TERM -<group>`),
// which reaches docket directly too. docket takes the second copy, a few milliseconds later, as
// an echo of the first, so one request still counts once (docs/distribution.md, "npm").
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", cannotStart);
child.on("exit", (code, signal) => {
  if (signal) {
    // Leave the way docket did, so a shell sees the same signal (130 after SIGINT, …).
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
});

function findBinary() {
  const name = `@docket/${target}/bin/docket${process.platform === "win32" ? ".exe" : ""}`;
  let path;
  try {
    path = require.resolve(name);
  } catch {
    if (!TARGETS.includes(target)) {
      fail(`docket has no binary for ${target}; it is released for ${TARGETS.join(", ")}.`);
    }
    // npm leaves the Linux package out on musl (Alpine: its libc field says glibc), where an
    // install with optional dependencies would skip it again.
    if (process.platform === "linux" && isMusl()) {
      fail(
        `docket's Linux binaries link glibc, and this Linux runs on musl (Alpine, say), so npm did not install @docket/${target}.\n` +
          "Run docket on a glibc Linux (a Debian or Ubuntu image, node:20-slim), or in a glibc compatibility layer (apk add gcompat, at your own risk).",
      );
    }
    fail(
      `The package @docket/${target}, which holds docket's binary for this machine, is not installed.\n` +
        "npm skips it when optional dependencies are left out (--omit=optional, --no-optional) or when the\n" +
        "lockfile was made on another platform. Install it again with: npm install --include=optional docket",
    );
  }
  if (process.platform !== "win32") {
    try {
      accessSync(path, constants.X_OK);
    } catch {
      // Some package managers drop the executable bit on files that are not a package's `bin`.
      try {
        chmodSync(path, 0o755);
      } catch (error) {
        fail(`${path} is not executable and cannot be made so (${error.message}); run: chmod +x "${path}"`);
      }
    }
  }
  return path;
}

/** True on a musl libc: Node's report names the glibc it runs on, and names none on musl. */
function isMusl() {
  try {
    const header = process.report && process.report.getReport().header;
    return Boolean(header) && !header.glibcVersionRuntime;
  } catch {
    return false;
  }
}

/**
 * Why the binary did not start. A glibc binary on musl (a package manager that ignores npm's
 * `libc` field installed it anyway: Yarn 1, npm before 10.4) fails as ENOENT, its interpreter
 * missing, although the file is there: said as the libc it needs (distribution tester, session 47).
 */
function cannotStart(error) {
  if (error && error.code === "ENOENT" && process.platform === "linux" && isMusl()) {
    fail(
      `cannot start ${binary}: docket's Linux binaries link glibc, and this Linux runs on musl (Alpine, say), whose loader cannot run them.\n` +
        "Run docket on a glibc Linux (a Debian or Ubuntu image, node:20-slim), or in a glibc compatibility layer (apk add gcompat, at your own risk).",
    );
  }
  fail(`cannot start ${binary}: ${error.message}`);
}

function fail(message) {
  console.error(`docket: ${message}`);
  process.exit(1);
}
