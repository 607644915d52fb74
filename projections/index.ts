import { agentsProjection } from './agents.ts';
import { endpointsProjection } from './endpoints.ts';
import { logProjection } from './log.ts';
import { providersProjection } from './providers.ts';
import { quarantineProjection } from './quarantine.ts'; // RULES (issue 7)
import { settingsProjection } from './settings.ts';
import { streamStatsProjection } from './stream-stats.ts';
import { todosProjection } from './todos.ts';
import type { Projection } from './types.ts';
import { webhooksProjection } from './webhooks.ts';

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
];
