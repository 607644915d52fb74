import type { Clock } from '../clock.ts';
import { type CommandDeps, handleCommand, readAggregate } from '../commands/handle-command.ts';
import type { Config } from '../config.ts';
import { type ProviderCommand, providerDecider } from '../domain/provider/decide.ts';
import { type ProviderEvent, providerStream } from '../domain/provider/events.ts';
import { parseProviderName } from '../domain/provider/names.ts';
import type { ProviderState } from '../domain/provider/state.ts';
import { asHooklineError, HooklineError } from '../errors.ts';
import type { EventStore } from '../eventstore/port.ts';

export interface LoadedProvider {
  readonly state: ProviderState;
  /** The stream's revision, -1n when it has no events yet. */
  readonly revision: bigint;
}

/**
 * Provider state straight from each provider's own stream (not from a read model, so ingestion
 * needs no projection). Ingestion reads through a short cache; this process's own decisions update
 * it at once, other processes' decisions are seen within `ttlMs`.
 */
export interface ProviderDirectory {
  /** For ingestion: the provider when it exists (configured or created), else undefined. */
  lookup(name: string): Promise<ProviderState | undefined>;
  /** Uncached, with the revision a decision appends at. Undefined for a malformed name. */
  load(name: string): Promise<LoadedProvider | undefined>;
  /** Decides a command against the fresh state and appends with the expected revision. */
  execute(command: ProviderCommand): Promise<{ state: ProviderState; events: readonly ProviderEvent[] }>;
}

export interface ProviderDirectoryDeps {
  readonly store: EventStore;
  readonly config: Config;
  readonly clock: Clock;
  readonly ttlMs?: number;
}

/** Whether the environment defines the provider (its secret, its broker channel). */
export function isConfigured(config: Config, name: string): boolean {
  const parsed = parseProviderName(name);
  if (!parsed) return false;
  switch (parsed.kind) {
    case 'codehost':
    case 'payments':
    case 'chat':
      return config.secrets[parsed.kind].length > 0;
    case 'broker':
      return config.broker.url !== undefined && config.broker.channels.includes(parsed.suffix!);
    default:
      return false;
  }
}

const MAX_CACHED = 1_000;

export function createProviderDirectory(deps: ProviderDirectoryDeps): ProviderDirectory {
  const { store, config, clock } = deps;
  const ttlMs = deps.ttlMs ?? 1_000;
  const cache = new Map<string, { expires: number; value: Promise<LoadedProvider | undefined> }>();

  async function load(name: string): Promise<LoadedProvider | undefined> {
    const parsed = parseProviderName(name);
    if (!parsed) return undefined;
    try {
      return await readAggregate(
        store,
        providerStream(name),
        providerDecider(name, parsed.kind, isConfigured(config, name)),
      );
    } catch (e) {
      throw new HooklineError(
        'storage_unavailable',
        'provider state cannot be read right now',
        {},
        { cause: e },
      );
    }
  }

  function remember(name: string, value: Promise<LoadedProvider | undefined>): void {
    // Unknown names are cached too (a flood of them must not become a flood of reads), so bound it.
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(name, { expires: Date.now() + ttlMs, value });
    value.catch(() => cache.delete(name));
  }

  return {
    load,
    async lookup(name) {
      const hit = cache.get(name);
      let value: Promise<LoadedProvider | undefined>;
      if (hit && hit.expires > Date.now()) {
        value = hit.value;
      } else {
        value = load(name);
        remember(name, value);
      }
      const loaded = await value;
      return loaded?.state.exists ? loaded.state : undefined;
    },
    async execute(command) {
      const parsed = parseProviderName(command.name);
      if (!parsed) throw new HooklineError('not_found', `no provider named ${command.name}`);
      const deps: CommandDeps = { store, clock };
      const decider = providerDecider(command.name, parsed.kind, isConfigured(config, command.name));
      try {
        // A concurrent decision on the same provider: decided again on the state it produced; a
        // race lost every time is a conflict (409), not the store failing.
        const result = await handleCommand(deps, providerStream(command.name), decider, command, {
          conflictMessage: `provider ${command.name} changed concurrently; retry`,
        });
        remember(command.name, Promise.resolve({ state: result.state, revision: result.revision }));
        return { state: result.state, events: result.events };
      } catch (e) {
        const known = asHooklineError(e);
        if (known) throw known;
        throw new HooklineError(
          'storage_unavailable',
          'the event log cannot be written right now',
          {},
          { cause: e },
        );
      }
    },
  };
}
