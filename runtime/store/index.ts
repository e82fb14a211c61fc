/** The execution store (docs/architecture.md): the interface, the memory and sqlite implementations, the list cursor error. */
export type { AppendOptions, EventListener, EventsPage, ExecutionHead, ExecutionStore, HeadsPage, ListFilter, ListPage, NewExecution, RunIdentity, StorageFault, SubscribeOptions, Subscription } from "./store.ts";
export { createMemoryStore, type MemoryStoreOptions } from "./memory-store.ts";
export { InvalidCursorError } from "./list-cursor.ts";
// bun:sqlite loads only when a sqlite store is created, so this import is safe under Node too;
// runtime/boot.ts still imports the module on demand, keeping it out of `docket run`.
export { createSqliteStore, StoreFileError, type RecoveredExecution, type SqliteExecutionStore, type SqliteStoreOptions } from "./sqlite-store.ts";
