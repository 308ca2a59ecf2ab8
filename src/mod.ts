/**
 * wsp-ggml: the ggml tensor library (whisper.rn's `wsp_ggml`) for TypeScript
 * on Deno, Bun and Node.js.
 *
 * ```ts
 * import { Context, Type } from "wsp-ggml";
 * using ctx = new Context({ memSize: 16 << 20 });
 * const a = ctx.newTensor2d(Type.F32, 2, 2).set(new Float32Array([1, 2, 3, 4]));
 * const b = ctx.newTensor2d(Type.F32, 2, 2).set(new Float32Array([5, 6, 7, 8]));
 * const c = ctx.mulMat(a, b);
 * ctx.newGraph().buildForwardExpand(c).compute({ nThreads: 2 });
 * console.log(c.get());
 * ```
 *
 * @module
 */
// The globals the declarations use that an es2022-only consumer lacks (types only).
import "./core/ambient.ts";
export { Context, type ContextOptions, graphOverhead, graphOverheadCustom, memoryStats, type MemoryStats, tensorOverhead } from "./core/context.ts";
export { type HandleKind, handleStats, type HandleStats } from "./core/owned.ts";
export { type ArrayType, Tensor, type TensorData } from "./core/tensor.ts";
export { type ComputeOptions, Graph } from "./core/graph.ts";
export type { OpChecks } from "./core/ops.gen.ts";
export * from "./core/errors.ts";
export {
  baseLibraryName,
  BUILD_COMMAND,
  CACHE_DIR_ENV,
  CPU_VARIANT_ENV,
  cpuVariants,
  cpuVariantScores,
  type CpuVariantScore,
  detectLibc,
  type Libc,
  PROBE_ENV,
  probeCacheDir,
  probeLibrary,
  type ProbeVerdict,
  type Library,
  LIBRARY_PATH_ENV,
  type LibraryLocation,
  loadLibrary,
  type LoadOptions,
  type SearchPlaces,
  localBuildDir,
  locateLibrary,
  platformPackage,
} from "./runtime/loader.ts";
export type { TypeTraits } from "./runtime/runtime.ts";
export * from "./gguf/mod.ts";
export { canQuantize, dequantize, quantize, type QuantizeOptions, requiresImatrix, rowSize, typeName } from "./core/quantize.ts";
export { GGML_COMMIT, VERSION, WHISPER_RN_VERSION } from "./runtime/version.ts";
export { type BackendInfo, systemInfo, type SystemInfo } from "./runtime/system_info.ts";
export { checkThreads, cpuLoad, type CpuLoad, defaultThreads, THREADS_ENV } from "./runtime/threads.ts";
export { abortTrace, type LogCallback, logFlush, LogLevel, type LogOptions, logSet } from "./runtime/log.ts";
export {
  DEFAULT_GRAPH_SIZE,
  DEFAULT_N_THREADS,
  GluOp,
  MAX_DIMS,
  MAX_NAME,
  MAX_N_THREADS,
  Op,
  OpPool,
  Prec,
  ROPE_TYPE_MROPE,
  ROPE_TYPE_NEOX,
  ROPE_TYPE_VISION,
  ScaleMode,
  SortOrder,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_VERSION,
  GgufType,
  Status,
  TensorFlag,
  Type,
  UnaryOp,
} from "./ffi/bindings.gen.ts";
export {
  type AsyncComputeOptions,
  Backend,
  BackendEvent,
  BackendReg,
  backendRegByName,
  backendRegs,
  bestDevice,
  type BestDeviceOptions,
  type CpuBackendOptions,
  Device,
  DEVICE_ENV,
  deviceByName,
  deviceByType,
  type DeviceCaps,
  type DeviceChoice,
  type DeviceInfo,
  type DeviceMemory,
  type DeviceProps,
  devices,
  deviceTypeName,
  type DeviceTypeName,
  loadAllFromPath,
  loadBackend,
  Threadpool,
  type ThreadpoolOptions,
} from "./backend/backend.ts";
export {
  allocCtxTensors,
  Buffer,
  BufferType,
  cpuBufferType,
  Gallocr,
  tensorCopy,
  tensorGet,
  tensorGetBytes,
  tensorGetInto,
  tensorMemset,
  tensorSet,
} from "./backend/buffer.ts";
export { extraBufferTypeFor, extraBufferTypes } from "./backend/extra_buft.ts";
export { SCHED_MAX_BACKENDS, SCHED_MAX_COPIES, Sched, type SchedEvalCallback, type SchedOptions } from "./backend/sched.ts";
export { BackendBufferUsage, BackendDevType, SchedPriority } from "./ffi/bindings.gen.ts";
export {
  type AdamWParams,
  defaultOptimizerParams,
  type EpochOptions,
  type EpochResult,
  type Estimate,
  fit,
  type FitEpoch,
  type FitOptions,
  OptBuildType,
  OptContext,
  type OptContextOptions,
  OptDataset,
  type OptDatasetOptions,
  type OptimizerParams,
  OptLossType,
  OptOptimizerType,
  type OptProgress,
  OptResult,
  type OptSummary,
  type SgdParams,
} from "./train/opt.ts";
export {
  isRpcBackend,
  RPC_DEFAULT_PORT,
  RPC_PROTOCOL_VERSION,
  rpcBackend,
  rpcCompute,
  rpcComputeAsync,
  rpcDevice,
  rpcDeviceMemory,
  rpcFaultCount,
  rpcGuard,
  rpcLastError,
  RpcServer,
  type RpcServerOptions,
  setRpcTimeout,
} from "./rpc/rpc.ts";
