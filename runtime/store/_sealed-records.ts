import { EVENT_TYPES, type EventType, type ExecutionEvent } from "../execution/protocol.ts";

/**
 * Beyond this many shapes a store stops naming new ones and seals such data as objects. The
 * protocol's payloads have a few dozen shapes (a type and which optional members it carries);
 * the bound only keeps an unforeseen source from growing the table.
 */
const SHAPES_MAX = 1024;

/** What one shape names: an event type and the members its data has, in their order. */
interface Shape {
  type: EventType;
  keys: readonly string[];
}

/**
 * One event as sealed, a JSON array: `[shape, offsetMs, ...values]` — the data's members by
 * position, their names and the event type in the shape — or, for data of a shape not named,
 * `[-1 - typeIndex, offsetMs, data]`.
 */
export type SealedRecord = [number, number, ...unknown[]];

/**
 * The shapes of the data a memory store has sealed, numbered as first seen: one table per store,
 * so that a sealed event carries its values and not its member names (a progress update's names
 * are half its JSON). Members whose value is undefined are left out of the shape, as JSON leaves
 * them out of an object: the data reads back as it would through JSON, members in their order.
 */
export class RecordShapes {
  private readonly ids = new Map<string, number>();
  private readonly shapes: Shape[] = [];

  /** The record of an event's type and data, `offsetMs` after the one before it. */
  encode(type: EventType, data: object, offsetMs: number): SealedRecord {
    const keys: string[] = [];
    const values: unknown[] = [];
    for (const key in data) {
      const value = (data as Record<string, unknown>)[key];
      if (value === undefined) continue;
      keys.push(key);
      values.push(value);
    }
    const name = `${type} ${keys.join(",")}`;
    let id = this.ids.get(name);
    if (id === undefined) {
      if (this.shapes.length >= SHAPES_MAX) return [-1 - EVENT_TYPES.indexOf(type), offsetMs, data];
      id = this.shapes.length;
      this.shapes.push({ type, keys });
      this.ids.set(name, id);
    }
    return [id, offsetMs, ...values];
  }

  /** The type and data a record holds (a fresh data object). */
  decode(record: SealedRecord): { type: EventType; data: ExecutionEvent["data"] } {
    const id = record[0];
    if (id < 0) return { type: EVENT_TYPES[-1 - id]!, data: record[2] as ExecutionEvent["data"] };
    const { type, keys } = this.shapes[id]!;
    const data: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) data[keys[i]!] = record[2 + i];
    return { type, data: data as ExecutionEvent["data"] };
  }
}
