import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';

const FORM = 'application/x-www-form-urlencoded';
/** A screen's form is a few short fields; anything larger is refused (413). */
export const FORM_LIMIT = 64 * 1024;

/** A flat object of a form post, the last value of a repeated field winning. */
export function lastValues(body: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(body)) out[name] = value;
  return out;
}

/**
 * Form posts of the screens (@fastify/formbody), for the encapsulated context `scope`; replacing an
 * inherited parser there changes no other surface.
 */
export async function registerForms(scope: FastifyInstance): Promise<void> {
  if (scope.hasContentTypeParser(FORM)) scope.removeContentTypeParser(FORM);
  await scope.register(formbody, { bodyLimit: FORM_LIMIT, parser: lastValues });
}
