// hookline screens: local times, the live stream (EventSource on /events) and form problems.
// No inline script anywhere: this file and htmx are the only scripts the CSP allows.
// Every value from the stream is written with textContent or an attribute, never as HTML.
(() => {
  const TRUST_LABELS = {
    signed: 'Signed',
    token: 'Token',
    open: 'Open · unchecked',
    queue: 'Broker',
    operator: 'Operator',
  };

  const all = (selector, root) => Array.from((root || document).querySelectorAll(selector));
  const pad = (n) => String(n).padStart(2, '0');

  // ---- times -------------------------------------------------------------------------------

  function localTime(d) {
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(
      d.getMinutes(),
    )}:${pad(d.getSeconds())}`;
  }

  function relativeTime(d, now) {
    const s = Math.round((now - d.getTime()) / 1000);
    if (s < 5) return 'just now';
    if (s < 60) return `${s} s ago`;
    const m = Math.round(s / 60);
    if (m < 60) return `${m} min ago`;
    const h = Math.round(m / 60);
    if (h < 48) return `${h} h ago`;
    return `${Math.round(h / 24)} days ago`;
  }

  function renderTime(el, now) {
    const iso = el.getAttribute('datetime');
    if (!iso) return;
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return;
    el.title = `${localTime(d)} (${iso})`;
    el.textContent = el.hasAttribute('data-relative') ? relativeTime(d, now) : localTime(d);
  }

  function renderTimes(root) {
    const now = Date.now();
    for (const el of all('time[datetime]', root)) renderTime(el, now);
  }

  function setTime(slot, iso, relative) {
    if (!slot) return;
    let el = slot.tagName === 'TIME' ? slot : slot.querySelector('time');
    if (!el) {
      el = document.createElement('time');
      slot.replaceChildren(el);
    }
    el.setAttribute('datetime', iso);
    if (relative) el.setAttribute('data-relative', '');
    else el.setAttribute('data-local', '');
    renderTime(el, Date.now());
  }

  const formatCount = (n) => Number(n).toLocaleString('en-US');

  // ---- connection indicator ----------------------------------------------------------------

  function setConnection(state) {
    for (const el of all('[data-connection-indicator]')) {
      el.setAttribute('data-connection', state);
      const label = el.querySelector('[data-connection-label]');
      if (label) label.textContent = state === 'receiving' ? 'Receiving' : 'Idle';
    }
  }

  function setStreamState(state) {
    for (const el of all('.live-pill')) el.setAttribute('data-stream', state);
  }

  // ---- dashboard -----------------------------------------------------------------------------

  function providerCard(name) {
    return all('[data-provider-card]').find((c) => c.dataset.provider === name) || null;
  }

  function newProviderCard(p) {
    const grid = document.querySelector('[data-provider-grid]');
    const tpl = document.getElementById('tpl-provider-card');
    if (!grid || !tpl) return null;
    const card = tpl.content.firstElementChild.cloneNode(true);
    card.dataset.provider = p.name;
    card.querySelector('[data-field="name"]').textContent = p.name;
    setTrust(card.querySelector('[data-field="trust"]'), p.trust_mode);
    grid.appendChild(card);
    const empty = document.querySelector('[data-provider-empty]');
    if (empty) empty.hidden = true;
    return card;
  }

  function updateCard(card, p) {
    card.querySelector('[data-field="recent_count"]').textContent = formatCount(p.recent_count);
    if (p.last_event_at) setTime(card.querySelector('[data-field="last_event_at"]'), p.last_event_at, true);
    // An unconfigured provider keeps saying so: a `status` knows its switch, not its secret.
    if (typeof p.enabled === 'boolean' && card.dataset.configured !== 'false') {
      card.dataset.enabled = String(p.enabled);
      const state = card.querySelector('[data-field="enabled"]');
      if (state) state.textContent = p.enabled ? 'Enabled' : 'Disabled';
    }
  }

  function setTotal(total, newest) {
    const el = document.querySelector('[data-total-recent]');
    if (el) el.textContent = formatCount(total);
    if (newest) setTime(document.querySelector('[data-newest]'), newest, true);
  }

  function onStatus(s) {
    setConnection(s.connection);
    if (!document.querySelector('[data-provider-grid]')) return;
    let total = 0;
    let newest = null;
    for (const p of s.providers) {
      const card = providerCard(p.name) || newProviderCard(p);
      if (card) updateCard(card, p);
      total += p.recent_count;
      if (p.last_event_at && (!newest || p.last_event_at > newest)) newest = p.last_event_at;
    }
    setTotal(total, newest);
  }

  function bumpDashboard(e) {
    if (!document.querySelector('[data-provider-grid]')) return;
    const card = providerCard(e.provider) || newProviderCard({ name: e.provider, trust_mode: e.trust_mode });
    if (card) {
      const count = card.querySelector('[data-field="recent_count"]');
      const n = Number(String(count.textContent).replace(/[^0-9]/g, '')) || 0;
      updateCard(card, { recent_count: n + 1, last_event_at: e.received_at });
      card.classList.remove('is-bumped');
      void card.offsetWidth;
      card.classList.add('is-bumped');
      setTimeout(() => card.classList.remove('is-bumped'), 1200);
    }
    const total = document.querySelector('[data-total-recent]');
    const t = total ? Number(String(total.textContent).replace(/[^0-9]/g, '')) || 0 : 0;
    setTotal(t + 1, e.received_at);
  }

  // ---- log -----------------------------------------------------------------------------------

  function setTrust(el, mode) {
    if (!el) return;
    el.setAttribute('data-trust', mode);
    el.textContent = TRUST_LABELS[mode] || mode;
  }

  // Rows are rendered by the server (GET /log/rows): a view asks for what is newer than its
  // newest row, one request at a time, and asks once more if deliveries came in meanwhile.
  const LIVE_EXTRA = 200;

  function overflow(view) {
    const banner = view.querySelector('[data-live-overflow]');
    if (banner) banner.hidden = false;
    view.dataset.live = 'false';
  }

  async function refreshRows(view, position) {
    if (view.dataset.live === 'false') return;
    if (view.dataset.fetching) {
      view.dataset.again = position;
      return;
    }
    const body = view.querySelector('[data-log-rows]');
    if (!body) return;
    const isLog = view.dataset.liveLog === 'log';
    const limit = Number(view.dataset.liveLimit) || 50;
    // The dashboard keeps a fixed short list; the log stops growing after a while and says so.
    if (isLog && body.children.length >= limit + LIVE_EXTRA) return overflow(view);
    const newest = body.querySelector('tr[data-id]');
    const q = new URLSearchParams({
      after: newest ? newest.dataset.id : '0',
      limit: String(limit),
      position,
    });
    if (view.dataset.filterProvider) q.set('provider', view.dataset.filterProvider);
    if (view.dataset.filterEventType) q.set('event_type', view.dataset.filterEventType);
    if (view.dataset.filterSince) q.set('since', view.dataset.filterSince);
    if (view.dataset.filterQ) q.set('q', view.dataset.filterQ);
    view.dataset.fetching = 'true';
    try {
      const res = await fetch(`/log/rows?${q}`);
      if (!res.ok) return;
      const html = await res.text();
      if (isLog && res.headers.get('x-hookline-more') === 'true') return overflow(view);
      if (!html.trim()) return;
      body.insertAdjacentHTML('afterbegin', html);
      if (!isLog) while (body.children.length > limit) body.lastElementChild.remove();
      renderTimes(body);
      const empty = view.querySelector('[data-log-empty]');
      if (empty) empty.hidden = true;
      // The footer counts the rows the page shows, live ones included.
      const shown = view.querySelector('[data-shown-count]');
      if (shown) shown.textContent = formatCount(body.children.length);
    } catch {
      // Offline for a moment: the next delivery asks again.
    } finally {
      delete view.dataset.fetching;
      const again = view.dataset.again;
      if (again !== undefined) {
        delete view.dataset.again;
        void refreshRows(view, again);
      }
    }
  }

  // ---- stream --------------------------------------------------------------------------------

  // A reset reloads the screen from the read models, but not again within this long: a log
  // projection lagging by more than the replay bound must not make the page reload in a loop.
  const RESET_RELOAD_PAUSE_MS = 30_000;

  function reloadAfterReset() {
    let last = 0;
    try {
      last = Number(sessionStorage.getItem('hookline:reset-reload')) || 0;
      if (Date.now() - last < RESET_RELOAD_PAUSE_MS) return;
      sessionStorage.setItem('hookline:reset-reload', String(Date.now()));
    } catch {
      return;
    }
    window.location.reload();
  }

  function connect() {
    if (!('EventSource' in window)) return;
    // The page's rows were read at this log position: the stream replays what came after it, so
    // nothing that arrived between the render and this connect is missed (and nothing is repeated).
    const after = document.body.dataset.streamAfter;
    const source = new EventSource(after ? `/events?after=${encodeURIComponent(after)}` : '/events');
    source.addEventListener('open', () => setStreamState('open'));
    source.addEventListener('error', () => setStreamState(source.readyState === 2 ? 'down' : 'connecting'));
    source.addEventListener('status', (m) => {
      try {
        onStatus(JSON.parse(m.data));
      } catch {}
    });
    source.addEventListener('event-received', (m) => {
      let e;
      try {
        e = JSON.parse(m.data);
      } catch {
        return;
      }
      setConnection('receiving');
      bumpDashboard(e);
      for (const view of all('[data-live-log]')) void refreshRows(view, m.lastEventId);
    });
    // A todo moved: the console's todo screens fetch their rows again (htmx, hx-trigger).
    source.addEventListener('todos-changed', () => document.body.dispatchEvent(new Event('todos-changed')));
    // Too much was missed to replay: the screen reloads from the read models.
    source.addEventListener('reset', () => {
      if (document.querySelector('[data-live-log], [data-provider-grid]')) reloadAfterReset();
    });
    window.addEventListener('pagehide', () => source.close());
  }

  // ---- form problems (422 and friends) -------------------------------------------------------

  let toastTimer;
  function toast(message) {
    const el = document.getElementById('toast');
    if (!el) return;
    el.textContent = message;
    el.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => {
      el.hidden = true;
    }, 6000);
  }

  function clearProblems(form) {
    for (const el of all('[data-error-for], [data-form-error]', form)) {
      el.hidden = true;
      el.textContent = '';
    }
    for (const input of all('[aria-invalid]', form)) input.removeAttribute('aria-invalid');
  }

  function problemOf(xhr) {
    try {
      const p = JSON.parse(xhr.responseText);
      if (p && typeof p === 'object') return p;
    } catch {}
    return { detail: `The request failed (${xhr.status}).` };
  }

  function showProblem(form, problem) {
    const message = String(problem.detail || problem.title || 'The request failed.');
    const field = typeof problem.field === 'string' ? problem.field : null;
    const slot = field ? all('[data-error-for]', form).find((el) => el.dataset.errorFor === field) : null;
    if (slot) {
      slot.textContent = message;
      slot.hidden = false;
      const input = all('[name]', form).find((el) => el.getAttribute('name') === field);
      if (input) {
        input.setAttribute('aria-invalid', 'true');
        input.focus();
      }
      return;
    }
    const general = form.querySelector('[data-form-error]');
    if (general) {
      general.textContent = message;
      general.hidden = false;
    } else toast(message);
  }

  document.addEventListener('htmx:beforeRequest', (evt) => {
    const form = evt.target.closest?.('form');
    if (form) clearProblems(form);
  });

  document.addEventListener('htmx:responseError', (evt) => {
    const xhr = evt.detail.xhr;
    const problem = problemOf(xhr);
    const form = evt.detail.elt?.closest ? evt.detail.elt.closest('form') : null;
    if (form?.hasAttribute('data-problem-form')) showProblem(form, problem);
    else toast(String(problem.detail || problem.title || `The request failed (${xhr.status}).`));
  });

  document.addEventListener('htmx:sendError', () =>
    toast('hookline cannot be reached. Check the connection.'),
  );

  document.addEventListener('htmx:afterSwap', () => renderTimes(document));

  // ---- start ---------------------------------------------------------------------------------

  renderTimes(document);
  setInterval(() => {
    const now = Date.now();
    for (const el of all('time[data-relative]')) renderTime(el, now);
  }, 5000);
  connect();
})();
