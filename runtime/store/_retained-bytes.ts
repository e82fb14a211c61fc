/**
 * The byte sizes of one execution's retained events, oldest first, against a budget
 * (`events_retained_bytes`): beyond it the oldest are dropped, as with the event count, but the
 * newest event is always kept. A deque over an array: O(1) per event, compacted now and then.
 */
export class RetainedBytes {
  private sizes: number[] = [];
  private head = 0;
  private total = 0;
  /** The sequence of the oldest retained event. */
  first = 1;

  /**
   * Starts empty at sequence `first`; events `first..next-1` already retained (an execution loaded
   * from a file) count as 0 bytes, since their sizes are not known here.
   */
  constructor(private readonly budget: number, first = 1, next = first) {
    this.first = first;
    for (let s = first; s < next; s++) this.sizes.push(0);
  }

  /** The bytes retained now. */
  get bytes(): number {
    return this.total;
  }

  /**
   * Takes the next event's size (its sequence is the last one plus 1), drops what the count no
   * longer keeps (below `firstByCount`) and then the oldest while over the budget; answers the
   * first retained sequence.
   */
  add(bytes: number, firstByCount: number): number {
    this.sizes.push(bytes);
    this.total += bytes;
    while (this.first < firstByCount) this.dropOldest();
    while (this.total > this.budget && this.sizes.length - this.head > 1) this.dropOldest();
    if (this.head > 1024 && this.head > this.sizes.length / 2) {
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
    return this.first;
  }

  private dropOldest(): void {
    this.total -= this.sizes[this.head]!;
    this.head++;
    this.first++;
  }
}
