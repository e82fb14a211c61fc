/**
 * A full garbage collection of this thread's heap, where the runtime offers one: Bun's `Bun.gc`,
 * Node's `gc` when started with --expose-gc; elsewhere nothing. What a finished handler allocated
 * outside the JavaScript heap (Buffers) stays resident until such a collection, which an idle
 * worker may never run on its own (docs/containment.md, "Memory").
 */
export function collectGarbage(): void {
  if (typeof Bun !== "undefined") Bun.gc(true);
  else (globalThis as { gc?: () => void }).gc?.();
}
