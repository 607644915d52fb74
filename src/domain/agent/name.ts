import { z } from 'zod';

/**
 * An agent name as an operator types it: one line, 1 to 100 characters after trimming. The slug
 * derives from it (kebab case), so any characters are allowed; control characters are not.
 */
export const agentNameSchema = z
  .string()
  .trim()
  .min(1, 'name must not be empty')
  .max(100, 'name must be at most 100 characters')
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'name must be one line without control characters');

/**
 * Kebab case for slugs: ASCII letters and digits, runs of anything else become one dash, at most
 * 40 characters. A name with no ASCII letter or digit becomes `agent`.
 */
export function kebab(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
  return base.length > 0 ? base : 'agent';
}
