// The platforms docket is released for, in one table: the release file names, Bun's compile
// targets, npm's os/cpu fields and the executable format each file must have (docs/distribution.md).

/** One platform of a release. */
export interface ReleaseTarget {
  /** `<os>-<arch>`, as in `docket-<version>-<os>-<arch>[.exe]` and `@docket/<os>-<arch>`. */
  name: string;
  os: "linux" | "darwin" | "windows";
  arch: "x64" | "arm64";
  /** Bun's `--target` for `bun build --compile`. */
  bun: Bun.Build.CompileTarget;
  /** `.exe` on Windows, empty elsewhere. */
  suffix: string;
  /** npm's `os` value (process.platform) and `cpu` value (process.arch). */
  npmOs: string;
  npmCpu: string;
  /** What `file` must say of the binary: format and architecture. */
  format: RegExp;
}

// x64 builds use Bun's baseline (Nehalem, 2008) runtime: the modern one needs AVX2 and dies with
// "Illegal instruction" on older CPUs, and docket starts no slower on it (bench/RESULTS.md).
/** Every released platform, in the order the release lists them. */
export const RELEASE_TARGETS: readonly ReleaseTarget[] = [
  { name: "linux-x64", os: "linux", arch: "x64", bun: "bun-linux-x64-baseline", suffix: "", npmOs: "linux", npmCpu: "x64", format: /ELF 64-bit LSB.*x86-64/ },
  { name: "linux-arm64", os: "linux", arch: "arm64", bun: "bun-linux-arm64", suffix: "", npmOs: "linux", npmCpu: "arm64", format: /ELF 64-bit LSB.*(ARM aarch64|aarch64)/ },
  { name: "darwin-x64", os: "darwin", arch: "x64", bun: "bun-darwin-x64-baseline", suffix: "", npmOs: "darwin", npmCpu: "x64", format: /Mach-O 64-bit x86_64 executable/ },
  { name: "darwin-arm64", os: "darwin", arch: "arm64", bun: "bun-darwin-arm64", suffix: "", npmOs: "darwin", npmCpu: "arm64", format: /Mach-O 64-bit arm64 executable/ },
  { name: "windows-x64", os: "windows", arch: "x64", bun: "bun-windows-x64-baseline", suffix: ".exe", npmOs: "win32", npmCpu: "x64", format: /PE32\+ executable \(console\) x86-64/ },
  { name: "windows-arm64", os: "windows", arch: "arm64", bun: "bun-windows-arm64", suffix: ".exe", npmOs: "win32", npmCpu: "arm64", format: /PE32\+ executable \(console\) Aarch64/ },
];

/** The target of a name, or an error listing the names there are. */
export function releaseTarget(name: string): ReleaseTarget {
  const target = RELEASE_TARGETS.find((t) => t.name === name);
  if (!target) throw new Error(`Unknown release target ${JSON.stringify(name)}; the targets are ${RELEASE_TARGETS.map((t) => t.name).join(", ")}.`);
  return target;
}

/** `docket-0.1.0-linux-x64`, `docket-0.1.0-windows-x64.exe`. */
export function releaseFileName(version: string, target: ReleaseTarget): string {
  return `docket-${version}-${target.name}${target.suffix}`;
}
