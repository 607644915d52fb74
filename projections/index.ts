import { agentsProjection } from './agents.projection.ts';
import { endpointsProjection } from './endpoints.projection.ts';
import type { Projection } from './engine/types.ts';
import { friendsProjection } from './friends.projection.ts';
import { logProjection } from './log.projection.ts';
import { providersProjection } from './providers.projection.ts';
import { quarantineProjection } from './quarantine.projection.ts'; // RULES (issue 7)
import { replaysProjection } from './replays.projection.ts';
import { settingsProjection } from './settings.projection.ts';
import { streamStatsProjection } from './stream-stats.projection.ts';
import { todosProjection } from './todos.projection.ts';
import { webhooksProjection } from './webhooks.projection.ts';

/** Every read model the runner keeps. Add a projection with one line. */
export const allProjections: Projection[] = [
  streamStatsProjection,
  logProjection,
  providersProjection,
  settingsProjection,
  agentsProjection,
  endpointsProjection,
  webhooksProjection,
  todosProjection,
  quarantineProjection, // RULES (issue 7)
  friendsProjection,
  replaysProjection,
];
