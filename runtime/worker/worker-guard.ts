// Preloaded into every thread a handler starts itself (`new Worker(…)` inside a pool worker):
// the same guard as the pool worker's own, before the thread's code runs (_own-process.ts).
import { guardOwnProcess } from "./_own-process.ts";

guardOwnProcess();
