import { createCachedAggregate } from '../commands/cached-aggregate.ts';
import { endpointDecider } from '../domain/endpoint/decide.ts';
import type { EventStore } from '../eventstore/port.ts';

/**
 * Endpoint states folded once and kept between requests, each used only while its stream's
 * revision is still the one it was folded at (the MCP bearer check, src/mcp/auth.ts).
 */
export const createCachedEndpoints = (store: EventStore) => createCachedAggregate(store, endpointDecider);
