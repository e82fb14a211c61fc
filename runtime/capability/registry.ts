import { basename } from "node:path";
import { builtinVersion, fileVersion } from "./capability-version.ts";
import type { CapabilityDef } from "./declaration.ts";
import { checkDeclaration, declarationThrew } from "./inspect.ts";
import { LOAD_ERROR_DETAIL, type CapabilityCatalog, type CapabilitySource, type LoadError, type RegisteredCapability } from "./registered.ts";
import { TakenIds } from "./taken-ids.ts";
import type { LookalikeFile } from "./_lookalike-files.ts";
import { plainText } from "../execution/text-sanitize.ts";
import { redact } from "../execution/redaction.ts";

/** Options of `CapabilityRegistry.add`. */
export interface AddCapabilityOptions {
  /** The file's source text, so that a problem points at its line (and its version is its digest). */
  text?: string;
  /** The version of the code, when the caller already knows it (docs/authoring.md, "Versions"). */
  version?: string;
}

/**
 * The one list of capabilities every surface reads (docs/architecture.md). A bad declaration becomes a
 * LoadError and the rest still load: nothing here throws for what a capability file says.
 */
export class CapabilityRegistry implements CapabilityCatalog {
  readonly #byId = new Map<string, RegisteredCapability>();
  readonly #taken = new TakenIds();
  readonly #errors: LoadError[] = [];
  readonly #parked = new Map<string, Promise<void>>();
  readonly #lookalikes: LookalikeFile[] = [];

  /** Checks and registers a declaration; returns it, or null when it became load errors. */
  add(def: unknown, source: CapabilitySource, options: AddCapabilityOptions = {}): RegisteredCapability | null {
    const check = checkDeclaration(def, { fileName: basename(source.file), text: options.text });
    if (check.problems.length > 0 || check.id === null || !check.input_schema || !check.output_schema) {
      for (const problem of check.problems) this.#record({ file: source.file, line: problem.line, column: problem.column, reason: problem.reason });
      return null;
    }
    // The first one stays: a checkout file can never shadow a built-in by loading later.
    const conflict = this.#taken.conflict(check.id, source);
    if (conflict) {
      const fix = conflict.holder ? "Give one of them another id." : "Give it another id.";
      this.#record({ file: source.file, line: null, column: null, reason: `${conflict.reason}; this file is ignored. ${fix}` });
      return null;
    }
    // The plain copy the check read, never the export again: a field is read once (inspect.ts readDeclaration).
    const declared = check.declaration as unknown as CapabilityDef;
    const execution = declared.execution ?? "allowed";
    let registered: RegisteredCapability;
    try {
      registered = {
        id: check.id,
        // Shown by every surface, a terminal's included: no escape sequence (a colour, a window
        // title, a screen cleared), control or bidi override of the file's text is passed on.
        title: plainText(declared.title),
        description: plainText(declared.description),
        effect: declared.effect,
        cancellable: declared.cancellable ?? false,
        timeout_ms: declared.timeout_ms ?? null,
        cache: declared.cache ? { ttl_ms: declared.cache.ttl_ms } : null,
        execution,
        // Published as docs, to every client: a secret given as an example (read from the environment,
        // say) is shown as a stored input shows it (docs/security.md).
        examples: (declared.examples ?? []).map((example) => redact(example, check.input_schema ?? undefined)),
        errors: [...(declared.errors ?? [])],
        input_schema: check.input_schema,
        output_schema: check.output_schema,
        source,
        version: options.version ?? versionOf(source, options.text),
        plane: source.kind === "builtin" && execution === "never",
        def: declared,
      };
    } catch (error) {
      // A value deeper in the declaration (an example) read through a getter or a Proxy that throws.
      this.#record({ file: source.file, line: null, column: null, reason: declarationThrew(error) });
      return null;
    }
    this.#byId.set(registered.id, registered);
    this.#taken.take(registered);
    return registered;
  }

  /** Records a file that never reached `add` (it did not import, or exported nothing). */
  addLoadError(error: LoadError, detail?: string): void {
    this.#record(error, detail);
  }

  /** A load error's reason quotes the file's text or what it threw, which every surface shows: as plain text (see plainText). */
  #record(error: LoadError, detail?: string): void {
    this.#errors.push({ ...error, reason: plainText(error.reason), ...(detail !== undefined ? { [LOAD_ERROR_DETAIL]: plainText(detail) } : {}) });
  }

  /** Every registered capability, sorted by id. */
  list(): RegisteredCapability[] {
    return [...this.#byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The capability with this id, or null. */
  get(id: string): RegisteredCapability | null {
    return this.#byId.get(id) ?? null;
  }

  /**
   * Records a file whose trial load outlasted a reload's patience (worker/load-probe.ts): neither
   * loaded nor refused yet; `settled` once its verdict is known.
   */
  park(file: string, settled: Promise<void>): void {
    this.#parked.set(file, settled);
  }

  /** The files parked while this registry was read, each with its verdict's promise. */
  parked(): ReadonlyMap<string, Promise<void>> {
    return this.#parked;
  }

  /** Notes files that look like capability files but are not loaded (discovery, _lookalike-files.ts). */
  noteLookalikes(files: LookalikeFile[]): void {
    this.#lookalikes.push(...files);
  }

  lookalikes(): LookalikeFile[] {
    return [...this.#lookalikes];
  }

  /** The files that did not load, in the order they were met. */
  loadErrors(): LoadError[] {
    return this.#errors.map((e) => ({ ...e }));
  }
}

/** A built-in is its docket release; a file is the digest of its text, or "unknown" when none was read. */
function versionOf(source: CapabilitySource, text: string | undefined): string {
  if (text !== undefined) return fileVersion(text);
  return source.kind === "builtin" ? builtinVersion() : "unknown";
}
