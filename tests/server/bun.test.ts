import { serverContract } from "./contract.ts";
import { startBun } from "./_support/servers.ts";

serverContract("Bun adapter", startBun);
