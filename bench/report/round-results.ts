import type { VariantMeasurement } from "../cases/measure-group.js";
import type { WindowCheck } from "../cases/server-counters.js";
import type { MachineLoad } from "../lib/machine-load.js";
import type { ConcurrencyResult } from "../inproc/concurrency.js";
import type { RegistryScaleResult } from "../inproc/registry-scale.js";
import type { AdmissionResult } from "../wire/admission-burst.js";
import type { RegistrationResult } from "../wire/registration.js";

/** Everything one round measured. */
export interface RoundResults {
  /** 1-based. */
  readonly round: number;
  readonly wire: VariantMeasurement[];
  concurrency?: ConcurrencyResult;
  registry?: RegistryScaleResult;
  /** Case 7: RegisterTool over gRPC. */
  registration?: RegistrationResult;
  /** Case 8: the StartExecution burst over gRPC. */
  admission?: AdmissionResult;
}

/** One measured window of a server-bound case, in the order the bench ran it: what the report lists. */
export interface WindowRecord {
  /** 1-based round. */
  readonly round: number;
  /** The variant or case, e.g. "toolruntime-grpc" or "registration (7)". */
  readonly name: string;
  /** The window's headline figure, e.g. "2,933 calls/s". */
  readonly figure: string;
  readonly check: WindowCheck;
  readonly machine: MachineLoad;
}
