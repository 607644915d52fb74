import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import {
  decide,
  evolve,
  initialProviderState,
  isProviderEventType,
  type ProviderCommand,
  type ProviderEvent,
  type ProviderState,
  parseProviderName,
  providerStream,
} from '../domain/provider/index.ts';
import { HooklineError } from '../errors.ts';
import { jsonEvent, parseData } from '../eventstore/codec.ts';
import { type EventStore, isWrongExpectedVersion, StreamNotFoundError } from '../eventstore/port.ts';

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
    let state = initialProviderState(name, parsed.kind, isConfigured(config, name));
    let revision = -1n;
    try {
      for await (const e of store.readStream(providerStream(name))) {
        revision = e.revision;
        if (isProviderEventType(e.type))
          state = evolve(state, { type: e.type, data: parseData(e) } as ProviderEvent);
      }
    } catch (e) {
      if (!(e instanceof StreamNotFoundError)) {
        throw new HooklineError(
          'storage_unavailable',
          'provider state cannot be read right now',
          {},
          { cause: e },
        );
      }
    }
    return { state, revision };
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
      for (let attempt = 0; ; attempt++) {
        const loaded = await load(command.name);
        if (!loaded) throw new HooklineError('not_found', `no provider named ${command.name}`);
        const events = decide(command, loaded.state, clock.now());
        if (events.length === 0) return { state: loaded.state, events };
        try {
          const result = await store.append(
            providerStream(command.name),
            events.map((e) => jsonEvent(e.type, e.data)),
            { expectedRevision: loaded.revision < 0n ? 'no_stream' : loaded.revision },
          );
          const state = events.reduce(evolve, loaded.state);
          remember(command.name, Promise.resolve({ state, revision: result.nextExpectedRevision }));
          return { state, events };
        } catch (e) {
          // A concurrent decision on the same provider: decide again on the state it produced.
          if (isWrongExpectedVersion(e) && attempt < 3) continue;
          if (e instanceof HooklineError) throw e;
          throw new HooklineError(
            'storage_unavailable',
            'the event log cannot be written right now',
            {},
            { cause: e },
          );
        }
      }
    },
  };
}
