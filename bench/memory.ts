/**
 * Peak resident set (VmHWM) of a process so far, in MB, from /proc (Linux); undefined elsewhere.
 * The design's memory target (250 MB RSS) holds through every benchmark, so each prints it.
 */
import { readFileSync, writeFileSync } from 'node:fs';

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
