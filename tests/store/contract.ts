import { describe } from "bun:test";
import type { Limits } from "../../runtime/execution/limits.ts";
import type { ExecutionStore, ForgotUnsettled } from "../../runtime/store/store.ts";
import { limitsWith, TestClock, type Fixture } from "./_fixtures.ts";
import { lifecycleCases } from "./_contract-lifecycle.ts";
import { boundsCases } from "./_contract-bounds.ts";
import { listCases } from "./_contract-list.ts";
import { subscribeCases } from "./_contract-subscribe.ts";
import { propertyCases } from "./_contract-property.ts";
import { durableCases } from "./_contract-durable.ts";
import { reconcileCases } from "./_contract-reconcile.ts";
import { textLimitCases } from "./_contract-text-limits.ts";

/**
 * The execution store contract (docs/architecture.md): every implementation runs this one suite. `makeStore`
 * builds a fresh, empty store with the given limits and clock for each test.
 */
export function storeContract(name: string, makeStore: (limits: Limits, clock: () => Date, onForgotUnsettled: ForgotUnsettled) => ExecutionStore): void {
  describe(`store contract: ${name}`, () => {
    const f: Fixture = {
      clock: new TestClock(),
      forgotUnsettled: [],
      make(overrides = {}) {
        this.clock = new TestClock();
        const clock = this.clock;
        const forgot: Fixture["forgotUnsettled"] = (this.forgotUnsettled = []);
        return makeStore(limitsWith(overrides), () => clock.now(), (forgotten) => forgot.push(forgotten));
      },
    };
    lifecycleCases(f);
    boundsCases(f);
    textLimitCases(f);
    listCases(f);
    subscribeCases(f);
    propertyCases(f);
    durableCases(f);
    reconcileCases(f);
  });
}
