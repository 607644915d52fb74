import type { FastifyInstance, FastifySchema, FastifyTypeProvider } from 'fastify';
import { ZodError, type z } from 'zod';
import { API_SCOPE } from '../../auth/oauth-settings.ts';
import { HooklineError } from '../../errors.ts';
import { summarizeZod, toHooklineError } from '../errors-plugin.ts';
import { Problem } from './schemas.ts';

/**
 * Route schemas of /api/v1 are zod schemas, the one source of both the request checks (this
 * validator compiler) and the OpenAPI document (@fastify/swagger, through openapi.ts).
 *
 * Why our own compiler and not fastify-type-provider-zod's: its compiler hands a missing body to
 * zod as `null` (Fastify's convention) and turns a failure into Ajv-style `validation` items, so
 * a bad request would answer a different `detail` than it always has; its document transform
 * names every request component `<Name>Input` from a second registry, where the spec names them
 * (VendEndpointIn, PushTodoIn). What it does is small enough to write down here.
 */
export interface ZodTypeProvider extends FastifyTypeProvider {
  readonly validator: this['schema'] extends z.ZodType ? z.output<this['schema']> : unknown;
}

type ProblemOf = (error: ZodError) => HooklineError;

/** How a schema's refusal becomes a problem; default: the errors plugin's reading of a ZodError. */
const problems = new WeakMap<z.ZodType, ProblemOf>();
/** What an absent body reads as, for a schema that says (default: undefined). */
const absentBodies = new WeakMap<z.ZodType, unknown>();

/**
 * `schema` answers its refusals with `problemOf` (an `invalid_filter`, a `field` member, …);
 * `absentBody`: an absent body is checked as this value (`{}`: a missing member is named).
 */
export function refusedAs<T extends z.ZodType>(
  schema: T,
  problemOf: ProblemOf,
  options: { readonly absentBody?: unknown } = {},
): T {
  problems.set(schema, problemOf);
  if ('absentBody' in options) absentBodies.set(schema, options.absentBody);
  return schema;
}

/** The refusal as a problem naming the `field` of its first issue, under `code`. */
export const fieldProblem =
  (code: 'invalid_body' | 'invalid_filter'): ProblemOf =>
  (error) => {
    const field = error.issues[0]?.path[0];
    return new HooklineError(code, summarizeZod(error), field === undefined ? {} : { field: String(field) });
  };

/**
 * Fastify's validator compiler for zod route schemas. A body that is absent (or JSON `null`)
 * reaches zod as `undefined` (or the schema's `absentBody`), as the handlers always read it; a path parameter is one value, so
 * its issues do not name it (the parameter schema is an object only so the document lists it).
 */
export function zodValidatorCompiler({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) {
  const zod = schema as unknown as z.ZodType;
  const problemOf = problems.get(zod) ?? toHooklineError;
  const absent = absentBodies.get(zod);
  return (data: unknown) => {
    const parsed = zod.safeParse(httpPart === 'body' && data === null ? absent : data);
    if (parsed.success) return { value: parsed.data };
    const error =
      httpPart === 'params'
        ? new ZodError(parsed.error.issues.map((issue) => ({ ...issue, path: issue.path.slice(1) })))
        : parsed.error;
    return { error: problemOf(error) };
  };
}

/**
 * Response schemas document the answers; they do not change them: bodies are serialized as
 * before (JSON.stringify), never checked or stripped against the schema.
 */
const serializeAsIs = () => (data: unknown) => JSON.stringify(data);

/** A scope whose routes carry zod schemas: requests are checked by them, typed by them. */
export function withZodSchemas(scope: FastifyInstance) {
  scope.setValidatorCompiler(zodValidatorCompiler);
  scope.setSerializerCompiler(serializeAsIs);
  return scope.withTypeProvider<ZodTypeProvider>();
}

/** A response of the document: `schema` served as application/json. */
export const answer = (description: string, schema: z.ZodType) => ({
  description,
  content: { 'application/json': { schema } },
});

/** A problem document answer (served as application/json on /api, spec section 7). */
export const problem = (description: string) => answer(description, Problem);

/**
 * The schema of a route behind the operator bearer: its security requirement and its 401.
 * `tags` group the routes on /api/docs.
 */
export function operatorRoute<S extends FastifySchema & { response?: Record<number, unknown> }>(
  schema: S,
): S {
  return {
    ...schema,
    security: [{ operatorOAuth: [API_SCOPE] }],
    response: {
      ...schema.response,
      401: problem('Missing, expired, revoked or non-operator bearer.'),
    },
  };
}
