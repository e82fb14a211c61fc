/** The execution store (SPEC §4.9): the interface, the memory implementation, the list cursor error. */
export type { EventListener, EventsPage, ExecutionStore, ListFilter, ListPage, NewExecution, RunIdentity, SubscribeOptions, Subscription } from "./store.ts";
export { createMemoryStore, type MemoryStoreOptions } from "./memory-store.ts";
export { InvalidCursorError } from "./list-cursor.ts";
