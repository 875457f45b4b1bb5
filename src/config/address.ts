import { isIPv4 } from 'node:net';

/**
 * One spelling per address, so a configured proxy matches the socket's report of it: IPv4-mapped IPv6
 * (`::ffff:10.0.0.1`, what a dual-stack socket reports for an IPv4 peer) becomes plain IPv4, IPv6 is lower-cased.
 */
export function normalizeAddress(address: string): string {
  const lower = address.trim().toLowerCase();
  if (lower.startsWith('::ffff:') && isIPv4(lower.slice(7))) return lower.slice(7);
  return lower;
}

/** 127.0.0.0/8, ::1 and IPv4-mapped 127.x. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const normal = normalizeAddress(address);
  if (isIPv4(normal)) return normal.startsWith('127.');
  return normal === '::1' || normal === '0:0:0:0:0:0:0:1';
}
