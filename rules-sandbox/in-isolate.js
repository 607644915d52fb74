// Runs once in every fresh isolate, before any rule. Its completion value is a control object whose
// functions the sandbox host calls through references it keeps on its own side; nothing here is
// reachable from rule code, and nothing of isolated-vm is ever put on the rule's global.
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: this file runs as a classic script in the isolate
  'use strict';
  const G = globalThis;
  const { freeze, getOwnPropertyDescriptor, getPrototypeOf, isFrozen } = Object;
  const { ownKeys } = Reflect;
  const isArray = Array.isArray;
  const ObjectPrototype = Object.prototype;
  const PromisePrototype = Promise.prototype;
  const FunctionConstructor = Function;
  const atomicStore = Atomics.store;
  const MESSAGE_MAX = 500;

  // Capabilities a rule has no use for, and the ones that would let one rule observe another:
  // shared memory and blocking waits, GC-timing objects, and RegExp's legacy static match state.
  for (const name of [
    'console',
    'SharedArrayBuffer',
    'Atomics',
    'WebAssembly',
    'FinalizationRegistry',
    'WeakRef',
    'eval',
  ]) {
    delete G[name];
  }
  for (const key of ownKeys(RegExp)) {
    if (typeof key === 'string' && (key.startsWith('$') || /^(input|last|left|right)/.test(key))) {
      delete RegExp[key];
    }
  }

  // Every object reachable from the global, and the intrinsics only reachable from instances, is
  // frozen: rules of different webhooks share this context, so none may leave state for another.
  const roots = [
    G,
    () => {},
    async () => {},
    function* () {},
    async function* () {},
    [].values(),
    ''[Symbol.iterator](),
    new Map().entries(),
    new Set().values(),
    /a/g[Symbol.matchAll](''),
    [].values().map((x) => x),
    Iterator.from({ next: () => ({ done: true }) }),
    (function* () {})(),
    (async function* () {})(),
  ];
  const seen = new Set();
  const stack = [];
  for (const root of roots) {
    stack.push(root);
    stack.push(getPrototypeOf(root));
  }
  while (stack.length > 0) {
    const value = stack.pop();
    if ((typeof value !== 'object' && typeof value !== 'function') || value === null || seen.has(value)) {
      continue;
    }
    seen.add(value);
    stack.push(getPrototypeOf(value));
    for (const key of ownKeys(value)) {
      const desc = getOwnPropertyDescriptor(value, key);
      if (desc === undefined) continue;
      stack.push(desc.value, desc.get, desc.set);
    }
    freeze(value);
  }

  const registry = new Map();
  let current;
  // Shared with the host (see share): the position of the rule running now, so that a call the
  // host stops midway (deadline, CPU budget, memory) names its rule. Never reachable from a rule.
  let position;

  const clip = (text) => (text.length > MESSAGE_MAX ? `${text.slice(0, MESSAGE_MAX - 1)}…` : text);

  const kindOf = (value) => (value === null ? 'null' : isArray(value) ? 'array' : typeof value);

  function describe(error) {
    try {
      if (error instanceof Error) return clip(`${String(error.name)}: ${String(error.message)}`);
      const kind = kindOf(error);
      const text =
        kind === 'object' || kind === 'function' || kind === 'array'
          ? ObjectPrototype.toString.call(error)
          : kind === 'symbol'
            ? error.toString()
            : String(error);
      return clip(`threw a non-Error value (${kind}): ${text}`);
    } catch {
      return 'threw a value that cannot be described';
    }
  }

  function threw(error) {
    const message = describe(error);
    // V8 reports some exhaustion as catchable RangeErrors; they are memory faults, not rule bugs.
    const memory = error instanceof RangeError && /allocation failed|Invalid string length/i.test(message);
    return { t: 'threw', m: message, mem: memory };
  }

  const invalid = (why) => ({ t: 'invalid', m: clip(`invalid action: ${why}`) });

  function normalize(action) {
    if (action === undefined || action === 'continue') return { t: 'continue' };
    if (typeof action === 'string')
      return invalid(`the only string action is 'continue', got ${JSON.stringify(action.slice(0, 80))}`);
    if (action === null || typeof action !== 'object')
      return invalid(`expected an object, 'continue' or undefined, got ${kindOf(action)}`);
    if (action instanceof Promise || getPrototypeOf(action) === PromisePrototype) {
      return invalid('a rule returned a promise; rules are synchronous');
    }
    const proto = getPrototypeOf(action);
    if (isArray(action) || (proto !== ObjectPrototype && proto !== null))
      return invalid('expected a plain object');
    const keys = ownKeys(action);
    if (keys.length !== 1) return invalid('an action has exactly one key: route, drop or quarantine');
    const key = keys[0];
    const desc = getOwnPropertyDescriptor(action, key);
    if (desc === undefined || !('value' in desc))
      return invalid('an action property must be a plain value, not a getter');
    const value = desc.value;
    if (key === 'route') {
      if (typeof value !== 'string')
        return invalid(`route must be a queue name string, got ${kindOf(value)}`);
      if (value.length > 64) return invalid('route queue name is longer than 64 characters');
      return { t: 'route', q: value };
    }
    if (key === 'drop') return value === true ? { t: 'drop' } : invalid('drop must be exactly true');
    if (key === 'quarantine')
      return value === true ? { t: 'quarantine' } : invalid('quarantine must be exactly true');
    return invalid(`unknown action key ${JSON.stringify(String(key).slice(0, 80))}`);
  }

  function deepFreeze(root) {
    const pending = [root];
    while (pending.length > 0) {
      const value = pending.pop();
      if (typeof value !== 'object' || value === null || isFrozen(value)) continue;
      freeze(value);
      for (const key of ownKeys(value)) pending.push(value[key]);
    }
    return root;
  }

  function instantiate(hash) {
    const factory = registry.get(hash);
    if (factory === undefined) return { t: 'compile', m: 'the rule was not compiled in this sandbox' };
    let fn;
    try {
      fn = factory();
    } catch (error) {
      return threw(error);
    }
    if (typeof fn !== 'function') {
      return { t: 'compile', m: `the rule source must evaluate to a function, got ${kindOf(fn)}` };
    }
    return { t: 'ok', fn };
  }

  return {
    // A Function body cannot close the function it is in, so a source cannot declare anything at
    // the context's top level (where it would outlive the evaluation and reach other rules).
    compile(hash, source) {
      try {
        registry.set(hash, new FunctionConstructor(`'use strict';\nreturn (\n${source}\n);`));
        return { t: 'ok' };
      } catch (error) {
        return { t: 'compile', m: describe(error) };
      }
    },
    check(hash) {
      const made = instantiate(hash);
      return made.t === 'ok' ? { t: 'ok' } : made;
    },
    forget(hash) {
      registry.delete(hash);
    },
    setDelivery(delivery) {
      current = deepFreeze(delivery);
    },
    share(buffer) {
      position = new Int32Array(buffer);
    },
    // The whole list in one call: rules run in order until one decides, each a fresh function.
    // The result carries the position of the rule it is about; before each rule runs, its
    // position is written where the host can read it even if the call never returns.
    evaluate(hashes, delivery) {
      const frozen = deepFreeze(delivery);
      const last = hashes.length - 1;
      for (let i = 0; i <= last; i++) {
        atomicStore(position, 0, i);
        const made = instantiate(hashes[i]);
        let step;
        if (made.t !== 'ok') {
          step = made;
        } else {
          try {
            step = normalize(made.fn(frozen));
          } catch (error) {
            step = threw(error);
          }
        }
        if (step.t !== 'continue' || i === last) {
          step.i = i;
          return step;
        }
      }
      return { t: 'continue', i: last };
    },
    // A fresh function per delivery: whatever a rule keeps in its closure dies with the evaluation.
    run(hash, last) {
      const made = instantiate(hash);
      let step;
      if (made.t !== 'ok') {
        step = made;
      } else {
        try {
          step = normalize(made.fn(current));
        } catch (error) {
          step = threw(error);
        }
      }
      if (last || step.t !== 'continue') current = undefined;
      return step;
    },
  };
})();
