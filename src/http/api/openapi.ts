import { z } from 'zod';
import { ACCESS_TOKEN_TTL_S, API_SCOPE, OAUTH_ROUTES } from '../../auth/oauth-settings.ts';
import { apiSchemas } from './schemas.ts';

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string) => ({ 'application/json': { schema: ref(id) } });
const problem = (description: string) => ({ description, content: json('Problem') });
const unauthorized = problem('Missing, expired, revoked or non-operator bearer.');
const refParam = {
  name: 'ref',
  in: 'path',
  required: true,
  description: 'The endpoint slug or its `ep_` id.',
  schema: { type: 'string' },
};

const queryParam = (name: string, description: string) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema: { type: 'string' },
});

/**
 * OpenAPI 3.1 for /api/v1, generated from the zod schemas the routes validate with (zod 4's
 * registry-wide `toJSONSchema`, so components reference each other by `$ref`).
 */
export function buildOpenApi(baseUrl: string, version: string): Record<string, unknown> {
  const { schemas } = z.toJSONSchema(apiSchemas, {
    io: 'input',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  });
  for (const schema of Object.values(schemas)) delete (schema as Record<string, unknown>).$schema;
  return {
    openapi: '3.1.0',
    info: {
      title: 'hookline operator API',
      version,
      description:
        'Register agents, vend scoped MCP endpoints and push todos. Every call needs an operator access ' +
        `token from the authorization code flow with PKCE (resource \`${baseUrl}/api\`, scope \`${API_SCOPE}\`); ` +
        `access tokens live ${ACCESS_TOKEN_TTL_S / 60} minutes and refresh tokens rotate.`,
    },
    servers: [{ url: `${baseUrl}/api/v1` }],
    security: [{ operatorOAuth: [API_SCOPE] }],
    components: {
      schemas,
      securitySchemes: {
        operatorOAuth: {
          type: 'oauth2',
          flows: {
            authorizationCode: {
              authorizationUrl: `${baseUrl}${OAUTH_ROUTES.authorization}`,
              tokenUrl: `${baseUrl}${OAUTH_ROUTES.token}`,
              refreshUrl: `${baseUrl}${OAUTH_ROUTES.token}`,
              scopes: { [API_SCOPE]: 'the operator API' },
            },
          },
        },
      },
    },
    paths: {
      '/agents': {
        get: {
          operationId: 'listAgents',
          summary: "The signed-in operator's agents",
          responses: {
            200: {
              description: 'Agents',
              content: { 'application/json': { schema: { type: 'array', items: ref('AgentOut') } } },
            },
            401: unauthorized,
          },
        },
      },
      '/endpoints': {
        get: {
          operationId: 'listEndpoints',
          summary: "The signed-in operator's endpoints (never a credential)",
          responses: {
            200: {
              description: 'Endpoints',
              content: { 'application/json': { schema: { type: 'array', items: ref('EndpointOut') } } },
            },
            401: unauthorized,
          },
        },
        post: {
          operationId: 'vendEndpoint',
          summary: 'Register (or reuse) an agent and mint its endpoint, credential, queue and webhook',
          requestBody: { required: true, content: json('VendEndpointIn') },
          responses: {
            201: { description: 'Vended; the token appears only here', content: json('VendEndpointOut') },
            400: problem(
              'Invalid body, missing name, reserved queue, both queue and queues, or a refused replay target; nothing minted.',
            ),
            401: unauthorized,
          },
        },
      },
      '/endpoints/{ref}': {
        patch: {
          operationId: 'updateEndpoint',
          summary: 'Change the queues an endpoint drains, or narrow its verbs',
          description:
            'Recorded as one event on the endpoint. Removing a queue that holds pending or claimed todos needs `move_to`, which moves them first.',
          parameters: [refParam],
          requestBody: { required: true, content: json('UpdateEndpointIn') },
          responses: {
            200: { description: 'The endpoint as it is now', content: json('EndpointOut') },
            400: problem(
              'Invalid body, reserved or malformed queue, more than 16 queues, a verb the endpoint does not hold, or move_to outside the new queues.',
            ),
            401: unauthorized,
            404: problem('No endpoint of the caller has that slug or id.'),
            409: problem(
              'A removed queue still holds pending or claimed todos and no move_to was given, or the endpoint is revoked.',
            ),
          },
        },
      },
      '/endpoints/{ref}/revoke': {
        post: {
          operationId: 'revokeEndpoint',
          summary: 'Revoke an endpoint: its credential, MCP sessions and todo pushes stop working',
          description: 'Idempotent: revoking a revoked endpoint answers 200 with it unchanged.',
          parameters: [refParam],
          responses: {
            200: { description: 'The endpoint, now revoked', content: json('EndpointOut') },
            401: unauthorized,
            404: problem('No endpoint of the caller has that slug or id.'),
          },
        },
      },
      '/endpoints/{ref}/todos': {
        post: {
          operationId: 'pushTodo',
          summary: 'Push a todo onto one of the endpoint’s queues and ring its doorbell',
          parameters: [refParam],
          requestBody: { required: true, content: json('PushTodoIn') },
          responses: {
            201: {
              description: 'The todo (created=false when the key matched a live todo)',
              content: json('PushTodoOut'),
            },
            400: problem(
              'Invalid body, empty or over-long title, queue outside the vended scope, or no queue on a multi-queue endpoint.',
            ),
            401: unauthorized,
            404: problem('No endpoint of the caller has that slug or id (unknown and foreign alike).'),
            409: problem('The endpoint is revoked (or expired).'),
          },
        },
      },
      '/events': {
        get: {
          operationId: 'listEvents',
          summary:
            'Accepted deliveries the operator may read (the instance receivers’, and their own endpoints’ webhooks and hand-offs), newest first',
          parameters: [
            queryParam(
              'provider',
              'codehost, payments, chat, generic:<name>, broker:<channel>, webhook:<id>, operator',
            ),
            queryParam('event_type', 'The provider-declared event type.'),
            queryParam('since', 'Inclusive lower bound: an ISO-8601 date-time or an event id.'),
            queryParam(
              'q',
              'Full text over payloads and event types (at most 200 characters): words (all must match), "a phrase", -word, or.',
            ),
            queryParam('cursor', 'The next_cursor of the previous page (opaque).'),
            {
              ...queryParam('limit', '1 to 200, default 50.'),
              schema: { type: 'integer', minimum: 1, maximum: 200 },
            },
          ],
          responses: {
            200: { description: 'A page of EventSummary rows', content: json('EventPage') },
            400: problem(
              'A filter, the cursor or the limit is invalid (`invalid_filter`, naming the field).',
            ),
            401: unauthorized,
          },
        },
      },
      '/events/{id}': {
        get: {
          operationId: 'getEvent',
          summary: 'One accepted delivery with its sanitized headers and payload',
          parameters: [
            {
              name: 'id',
              in: 'path',
              required: true,
              description: 'The event id.',
              schema: { type: 'integer' },
            },
          ],
          responses: {
            200: { description: 'The event', content: json('EventDetail') },
            401: unauthorized,
            404: problem('No event the operator may read has that id (unknown and another’s alike).'),
            503: problem('The log read model stayed behind a delivery the store holds past the bound.'),
          },
        },
      },
      '/events/{id}/replay': {
        post: {
          operationId: 'replayEvent',
          summary:
            'Send a delivery again, bytes and content type as received, to an https target through the SSRF guard; every attempt is recorded',
          parameters: [
            {
              name: 'id',
              in: 'path',
              required: true,
              description: 'The event id.',
              schema: { type: 'integer' },
            },
          ],
          requestBody: { required: true, content: json('ReplayIn') },
          responses: {
            200: {
              description: 'The target answered (any status; a redirect is reported, never followed)',
              content: json('ReplayAttempt'),
            },
            400: problem(
              'No target_url (`invalid_body`), or the SSRF guard refused the target (`replay_refused`, with the recorded `attempt`).',
            ),
            401: unauthorized,
            404: problem('No retained event the operator may read has that id.'),
            502: problem(
              'The target could not be reached: timeout, TLS or network (`replay_failed`, with the recorded `attempt`).',
            ),
          },
        },
      },
      '/me': {
        get: {
          operationId: 'whoAmI',
          summary: 'Who the access token acts for',
          responses: {
            200: { description: 'The signed-in operator', content: json('Me') },
            401: unauthorized,
          },
        },
      },
    },
  };
}
