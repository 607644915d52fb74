// Replay with the SSRF guard: the call-time check, the connect-time dispatcher and the client.
export {
  createReplayClient,
  type ReplayClient,
  type ReplayClientOptions,
  type ReplayRequest,
  type ReplayResult,
} from './client.ts';
export {
  createReplayDispatcher,
  isReplayRefused,
  type ReplayDispatcherOptions,
  ReplayRefusedError,
} from './dispatcher.ts';
export {
  type AddressVerdict,
  type ClassifyAddress,
  checkReplayTarget,
  classifyAddress,
  type GuardOptions,
  type RefusalReason,
  type ResolveHost,
  resolveHost,
  type TargetCheck,
} from './ssrf.ts';
