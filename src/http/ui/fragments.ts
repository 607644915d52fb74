import { loadAssets } from './assets.ts';
import { createViews, type Views } from './views.ts';

let shared: Views | undefined;

/**
 * Renders a fragment for routes outside the UI plugin (the provider routes keep their one-function
 * renderer). The environment is created on first use and only caches compiled templates: no
 * request state lives here.
 */
export function renderFragment(name: string, context: Record<string, unknown>): string {
  shared ??= createViews({ assets: loadAssets(), version: '' });
  return shared.render(name, context);
}
