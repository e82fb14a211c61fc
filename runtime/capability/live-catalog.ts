import { loadErrorReason, type CapabilityCatalog, type LoadError, type RegisteredCapability } from "./registered.ts";
import type { LookalikeFile } from "./_lookalike-files.ts";

/** What changed between two registries, by capability id (a changed one has another version). */
export interface CatalogChange {
  added: string[];
  changed: string[];
  removed: string[];
  /** Load errors of the new registry that the old one did not have. */
  newErrors: LoadError[];
  /** How many load errors of the old registry are gone (a file fixed or removed). */
  clearedErrors: number;
}

/**
 * The catalog `docket serve` hands every surface when it watches the capability folders
 * (docs/authoring.md, "Live reload"): one registry at a time, swapped whole, so HTTP, OpenAPI,
 * MCP, the cockpit and capabilities.list can never show two versions of the folder at once.
 * An execution keeps the RegisteredCapability it was admitted with, so it finishes on that code.
 */
export class LiveCatalog implements CapabilityCatalog {
  #current: CapabilityCatalog;
  readonly #listeners = new Set<(change: CatalogChange) => void>();

  constructor(initial: CapabilityCatalog) {
    this.#current = initial;
  }

  list(): RegisteredCapability[] {
    return this.#current.list();
  }

  get(id: string): RegisteredCapability | null {
    return this.#current.get(id);
  }

  loadErrors(): LoadError[] {
    return this.#current.loadErrors();
  }

  lookalikes(): LookalikeFile[] {
    return this.#current.lookalikes?.() ?? [];
  }

  /** The registry in place now (a later swap does not change it). */
  snapshot(): CapabilityCatalog {
    return this.#current;
  }

  /** Puts `next` in place of the current registry and tells the listeners what changed; returns that. */
  swap(next: CapabilityCatalog): CatalogChange {
    const change = diffCatalogs(this.#current, next);
    this.#current = next;
    if (isEmptyChange(change)) return change;
    for (const listener of [...this.#listeners]) {
      try {
        listener(change);
      } catch {
        // A listener (an MCP session that just closed) must not stop the others from hearing it.
      }
    }
    return change;
  }

  /** Calls `listener` after every swap; returns the function that stops it. */
  subscribe(listener: (change: CatalogChange) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }
}

/** The ids added, changed (another version, or another file) and removed from `before` to `after`. */
export function diffCatalogs(before: CapabilityCatalog, after: CapabilityCatalog): CatalogChange {
  const old = new Map(before.list().map((c) => [c.id, c]));
  const added: string[] = [];
  const changed: string[] = [];
  for (const capability of after.list()) {
    const was = old.get(capability.id);
    old.delete(capability.id);
    if (!was) added.push(capability.id);
    else if (was.version !== capability.version || was.source.file !== capability.source.file) changed.push(capability.id);
  }
  const known = new Set(before.loadErrors().map(errorKey));
  const now = new Set(after.loadErrors().map(errorKey));
  const newErrors = after.loadErrors().filter((error) => !known.has(errorKey(error)));
  const clearedErrors = [...known].filter((key) => !now.has(key)).length;
  return { added, changed, removed: [...old.keys()], newErrors, clearedErrors };
}

function errorKey(error: LoadError): string {
  // What the file threw, too: a throw that says something else is a new error for the log to say.
  return `${error.file}\n${error.line}\n${error.column}\n${loadErrorReason(error)}`;
}

/** True when nothing a surface shows changed. */
export function isEmptyChange(change: CatalogChange): boolean {
  return change.added.length + change.changed.length + change.removed.length + change.newErrors.length + change.clearedErrors === 0;
}
