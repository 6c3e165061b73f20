import type { VariantMeasurement } from "../cases/measure-variant.js";
import type { ConcurrencyResult } from "../inproc/concurrency.js";
import type { RegistryScaleResult } from "../inproc/registry-scale.js";

/** Everything one round measured. */
export interface RoundResults {
  /** 1-based. */
  readonly round: number;
  readonly wire: VariantMeasurement[];
  concurrency?: ConcurrencyResult;
  registry?: RegistryScaleResult;
}
