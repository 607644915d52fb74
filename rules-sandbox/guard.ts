import type ivmModule from 'isolated-vm';
import { clip } from './limits.ts';
import type { SandboxLimits } from './protocol.ts';
import type { FaultReason } from './types.ts';

/** The isolate a call runs in, and whether the host (rather than isolated-vm) disposed it. */
export interface GuardTarget {
  readonly isolate: ivmModule.Isolate;
  disposedByUs: boolean;
}

/** One evaluation's allowance: a wall-clock deadline and the isolate CPU time at its start. */
export interface Budget {
  readonly deadlineAt: number;
  readonly cpuStart: bigint;
}

/** `stuck`: the isolate was stopped but its thread did not unwind within the grace period. */
export type Guarded<T> =
  | { ok: true; value: T }
  | { ok: false; reason: FaultReason; message: string; stuck: boolean };

export interface Guard {
  budget(target: GuardTarget): Budget;
  /** Runs one call into the isolate under the budget; never rejects. */
  run<T>(target: GuardTarget, budget: Budget, call: (timeout: number) => Promise<T>): Promise<Guarded<T>>;
  /** After a call returned (the isolate idle): limits it crossed without being stopped mid-way. */
  after(target: GuardTarget, budget: Budget): Guarded<void>;
}

/**
 * The limits are enforced from outside the isolate: a timer for the wall-clock deadline, a poll of
 * isolate.cpuTime for the CPU budget, and disposal of the isolate when either is crossed.
 * isolated-vm's own `timeout` is passed too, as the first line.
 */
export function createGuard(limits: SandboxLimits): Guard {
  const memoryLimitBytes = limits.memoryLimitMb * 1024 * 1024;
  const cpuBudgetNs = BigInt(Math.round(limits.cpuBudgetMs * 1e6));
  const pollMs = Math.max(2, Math.min(10, Math.floor(limits.cpuBudgetMs / 4)));
  const memory = {
    reason: 'memory',
    message: `the rule exceeded the ${limits.memoryLimitMb} MB memory limit`,
  } as const;
  const cpu = {
    reason: 'cpu',
    message: `the rule exceeded the CPU budget of ${limits.cpuBudgetMs} ms`,
  } as const;
  const timeout = {
    reason: 'timeout',
    message: `the rules did not finish within the ${limits.deadlineMs} ms deadline`,
  } as const;

  function cpuUsed(target: GuardTarget, budget: Budget): bigint {
    try {
      return target.isolate.cpuTime - budget.cpuStart;
    } catch {
      return 0n;
    }
  }

  function classify(error: unknown, target: GuardTarget): { reason: FaultReason; message: string } {
    const text = error instanceof Error ? error.message : String(error);
    if (/memory limit/i.test(text) || (target.isolate.isDisposed && !target.disposedByUs)) return memory;
    if (/timed out/i.test(text)) return timeout;
    return { reason: 'crashed', message: clip(`sandbox error: ${text}`) };
  }

  function run<T>(
    target: GuardTarget,
    budget: Budget,
    call: (timeout: number) => Promise<T>,
  ): Promise<Guarded<T>> {
    return new Promise((resolve) => {
      let verdict: { reason: FaultReason; message: string } | null = null;
      let settled = false;
      let grace: NodeJS.Timeout | undefined;
      const finish = (result: Guarded<T>) => {
        if (settled) return;
        settled = true;
        clearInterval(poll);
        clearTimeout(deadline);
        clearTimeout(grace);
        resolve(result);
      };
      const stop = (why: { reason: FaultReason; message: string }) => {
        if (verdict) return;
        verdict = why;
        if (!target.isolate.isDisposed) {
          target.disposedByUs = true;
          target.isolate.dispose();
        }
        grace = setTimeout(() => finish({ ok: false, ...why, stuck: true }), limits.graceMs);
      };
      const poll = setInterval(() => {
        // isolated-vm disposes an isolate that crosses its memory limit, at times without ever
        // settling the call that was running in it.
        if (target.isolate.isDisposed && !target.disposedByUs) stop(memory);
        else if (cpuUsed(target, budget) > cpuBudgetNs) stop(cpu);
      }, pollMs);
      const remaining = Math.max(1, budget.deadlineAt - Date.now());
      const deadline = setTimeout(() => stop(timeout), remaining);
      let started: Promise<T>;
      try {
        started = Promise.resolve(call(remaining));
      } catch (error) {
        started = Promise.reject(error);
      }
      started.then(
        (value) => finish(verdict ? { ok: false, ...verdict, stuck: false } : { ok: true, value }),
        (error: unknown) => finish({ ok: false, ...(verdict ?? classify(error, target)), stuck: false }),
      );
    });
  }

  function after(target: GuardTarget, budget: Budget): Guarded<void> {
    if (cpuUsed(target, budget) > cpuBudgetNs) return { ok: false, ...cpu, stuck: false };
    // V8 lets a large string be allocated past the heap limit without tripping it (measured: a
    // 100 MB string in a 16 MB isolate), so what the isolate holds is measured after its call.
    // The isolate is idle here, so the synchronous read takes its lock at once.
    let heap: ivmModule.HeapStatistics;
    try {
      heap = target.isolate.getHeapStatisticsSync();
    } catch (error) {
      return { ok: false, ...classify(error, target), stuck: false };
    }
    if (heap.used_heap_size + heap.externally_allocated_size > memoryLimitBytes) {
      return { ok: false, ...memory, stuck: false };
    }
    return { ok: true, value: undefined };
  }

  return {
    budget: (target) => ({ deadlineAt: Date.now() + limits.deadlineMs, cpuStart: target.isolate.cpuTime }),
    run,
    after,
  };
}
