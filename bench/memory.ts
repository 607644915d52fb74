/**
 * Peak resident set (VmHWM) of a process so far, in MB, from /proc (Linux); undefined elsewhere.
 * The design's memory target (250 MB RSS) holds through every benchmark, so each prints it.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

export function peakRssMb(pid: number | 'self' = 'self'): number | undefined {
  try {
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

export const formatMb = (mb: number | undefined): string =>
  mb === undefined ? 'n/a' : `${mb.toFixed(0)} MB`;

/** Starts this process's peak over from its current RSS (Linux: `clear_refs` 5); false where it cannot. */
export function resetPeakRss(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

/** A process and all its descendants, from /proc (Linux); empty elsewhere. */
export function processTree(rootPid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  for (const e of entries) {
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'latin1');
      // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(e));
      children.set(ppid, list);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const queue = [rootPid];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/**
 * Memory of a set of processes now, in MB: the sum of their RSS (which counts shared memory, such
 * as PostgreSQL's shared buffers, once per process that touched it) and of their PSS (each shared
 * page divided among its sharers: what the set really holds).
 */
export function memoryOf(pids: readonly number[]): { rssMb: number; pssMb: number } {
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    try {
      rss += Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      pss += Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      // exited meanwhile
    }
  }
  return { rssMb: rss / 1024, pssMb: pss / 1024 };
}

/** The postmaster of an embedded data directory (`<dir>/pg/postmaster.pid`), if one is recorded. */
export function postmasterOf(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(`${dataDir}/pg/postmaster.pid`, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Samples the memory of a process tree until stopped; returns the peaks of the sums. */
export function sampleTreePeak(rootPid: () => number | undefined, everyMs = 200) {
  let peak = { rssMb: 0, pssMb: 0 };
  const sample = () => {
    const pid = rootPid();
    if (pid === undefined) return;
    const m = memoryOf(processTree(pid));
    peak = { rssMb: Math.max(peak.rssMb, m.rssMb), pssMb: Math.max(peak.pssMb, m.pssMb) };
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}
