/** A 1-based line and column in a source file. */
export interface SourceLocation {
  line: number;
  column: number;
}

/**
 * Where a declaration property (`id:`, `examples:`) is written in a capability file's source, so a
 * problem with it points at the line to edit. A text search, not a parse: the first match wins,
 * and `null` when the property is not written literally (spread, computed).
 */
export function locateProperty(text: string | undefined, key: string): SourceLocation | null {
  if (!text) return null;
  // Escaped: an unknown field's name is whatever the file wrote (`"a.b(": 1`).
  const pattern = new RegExp(`(^|[\\s{,])(["']?)${key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\2\\s*[:(]`);
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const match = pattern.exec(lines[i]!);
    if (match) return { line: i + 1, column: match.index + match[1]!.length + 1 };
  }
  return null;
}

/** The first line that imports `specifier` (quoted either way), for an import Bun gives no position. */
export function locateSpecifier(text: string | undefined, specifier: string): SourceLocation | null {
  if (!text || specifier === "") return null;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    for (const quote of ['"', "'", "`"]) {
      const column = lines[i]!.indexOf(`${quote}${specifier}${quote}`);
      if (column !== -1) return { line: i + 1, column: column + 1 };
    }
  }
  return null;
}
