export { decide, type ProviderCommand } from './decide.ts';
export * from './events.ts';
export * from './names.ts';
export { evolve, initialProviderState, type ProviderState } from './state.ts';
