/** Bytes of one shared buffer; a text longer than this gets a buffer of its own. */
const SLAB_BYTES = 256 * 1024;

/** Bytes before each text: its UTF-8 length. */
const HEADER_BYTES = 4;

/** Refs are `slab * SLAB_STRIDE + offset`: a whole number a field holds without an object. */
const SLAB_STRIDE = 2 ** 32;

interface Slab {
  bytes: Buffer;
  used: number;
  /** Texts put here and not released yet: at 0 the slab goes. */
  live: number;
}

/**
 * Long-lived texts (sealed executions, see SealedExecution) packed side by side into shared
 * buffers of SLAB_BYTES. Kept as strings, each ~1 KiB text of a retained execution would land
 * in an allocator page among the short-lived strings of running executions and, once those are
 * collected, keep the page resident: measured, a retained execution then cost twice its text
 * in resident memory. Packed, it costs its text.
 *
 * A slab is dropped when every text in it is released. Texts are released about in the order
 * they were put (the store forgets finished executions oldest first), so slabs empty whole.
 */
export class TextSlabs {
  private readonly slabs = new Map<number, Slab>();
  private current: Slab | null = null;
  private currentId = -1;

  /** Keeps a text; answers the ref that reads it back. */
  put(text: string): number {
    const length = Buffer.byteLength(text);
    let slab = this.current;
    if (slab === null || slab.used + HEADER_BYTES + length > slab.bytes.length) {
      slab = { bytes: Buffer.allocUnsafe(Math.max(SLAB_BYTES, HEADER_BYTES + length)), used: 0, live: 0 };
      this.retireCurrent();
      this.current = slab;
      this.slabs.set(++this.currentId, slab);
    }
    const offset = slab.used;
    slab.bytes.writeUInt32LE(length, offset);
    slab.bytes.write(text, offset + HEADER_BYTES, length, "utf8");
    slab.used += HEADER_BYTES + length;
    slab.live++;
    return this.currentId * SLAB_STRIDE + offset;
  }

  /** The text a ref names; it must not have been released. */
  get(ref: number): string {
    const { bytes } = this.slabOf(ref);
    const offset = ref % SLAB_STRIDE;
    const start = offset + HEADER_BYTES;
    return bytes.toString("utf8", start, start + bytes.readUInt32LE(offset));
  }

  /** Gives a text up; its slab goes with the last of its texts. */
  release(ref: number): void {
    const id = Math.floor(ref / SLAB_STRIDE);
    const slab = this.slabOf(ref);
    if (--slab.live === 0 && slab !== this.current) this.slabs.delete(id);
  }

  /** How many buffers are held now (for tests). */
  get slabCount(): number {
    return this.slabs.size;
  }

  /** The slab being filled is replaced: it goes now if nothing in it is still held. */
  private retireCurrent(): void {
    if (this.current !== null && this.current.live === 0) this.slabs.delete(this.currentId);
  }

  private slabOf(ref: number): Slab {
    const slab = this.slabs.get(Math.floor(ref / SLAB_STRIDE));
    if (slab === undefined) throw new Error(`Text ${ref} was released already; this is a bug in the memory store.`);
    return slab;
  }
}
