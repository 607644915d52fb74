import type { FastifyInstance } from 'fastify';
import { getSettings, listRetentionRuns } from '../../../projections/settings.queries.ts';
import { type SettingName, type Settings, settingBounds, settingNames } from '../../domain/settings/state.ts';
import { DEFAULT_RETENTION_INTERVAL_MS } from '../../retention/job.ts';
import { changeSettings } from '../../settings/change.ts';
import { actorOf, layoutContext, sendHtml, type UiDeps, wantsFragment } from './context.ts';

/** A form value as a number: whole decimal numbers only; anything else is NaN and refused (422). */
function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return Number.NaN;
  const t = value.trim();
  return /^[+-]?[0-9]{1,16}$/.test(t) ? Number(t) : Number.NaN;
}

/** GET and POST /settings (spec 4.9). */
export function registerSettingsPage(app: FastifyInstance, deps: UiDeps): void {
  const panel = async (settings: Settings, saved: boolean) => {
    const [current, runs, removals] = await Promise.all([
      getSettings(deps.db),
      listRetentionRuns(deps.db, { limit: 1 }),
      listRetentionRuns(deps.db, { limit: 1, removalsOnly: true }),
    ]);
    return {
      settings,
      saved,
      updatedAt: current.updatedAt,
      changedBy: current.changedBy,
      bounds: settingBounds,
      lastRun: runs[0] ?? null,
      lastRemoval: removals[0] ?? null,
      retentionIntervalS: DEFAULT_RETENTION_INTERVAL_MS / 1000,
      general: {
        version: deps.config.version,
        mode: deps.config.mode,
        baseUrl: deps.config.baseUrl,
        maxBodyBytes: deps.config.maxBodyBytes,
        signatureToleranceS: deps.config.signatureToleranceS,
      },
    };
  };

  app.get('/settings', async (_request, reply) => {
    const { settings } = await getSettings(deps.db);
    return sendHtml(
      reply,
      deps.views.render('pages/settings.njk', {
        ...layoutContext(deps, 'settings'),
        ...(await panel(settings, false)),
      }),
    );
  });

  app.post('/settings', async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const values: Partial<Record<SettingName, number>> = {};
    for (const name of settingNames) if (name in body) values[name] = toNumber(body[name]);
    const result = await changeSettings(
      { store: deps.store, clock: deps.clock },
      { type: 'ChangeSettings', values, actor: actorOf(deps, request) },
    );
    let settings = result.state.settings;
    if (result.position) {
      try {
        await deps.projections.waitFor(result.position, {
          projection: 'settings',
          timeoutMs: deps.readYourWritesMs ?? 2000,
        });
        settings = (await getSettings(deps.db)).settings;
      } catch {
        // The read model is late: show what was decided; the next GET shows the read model.
      }
    }
    const view = await panel(settings, true);
    if (wantsFragment(request))
      return sendHtml(reply, deps.views.render('fragments/settings-panel.njk', view));
    return sendHtml(
      reply,
      deps.views.render('pages/settings.njk', { ...layoutContext(deps, 'settings'), ...view }),
    );
  });
}
