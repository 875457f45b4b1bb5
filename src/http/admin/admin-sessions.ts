import { createHash, randomBytes } from 'node:crypto';

/** How long a dashboard sign-in lasts. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Sessions kept at most; the oldest is dropped past it (a flood of sign-ins cannot grow memory). */
const MAX_SESSIONS = 1_000;

export const SESSION_COOKIE = 'tollgate_admin_session';

function digest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

/**
 * Dashboard sign-ins: the admin key is exchanged once for a random session token, kept by the browser in an
 * httpOnly cookie (scripts on the page never see it, nor the admin key after sign-in). Only the token's sha256 is
 * held, in memory: a restart signs everyone out, and nothing on disk can be replayed.
 */
export class AdminSessions {
  private readonly sessions = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  create(): { token: string; expiresAt: number } {
    const token = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + SESSION_TTL_MS;
    if (this.sessions.size >= MAX_SESSIONS) {
      const oldest = this.sessions.keys().next().value;
      if (oldest !== undefined) this.sessions.delete(oldest);
    }
    this.sessions.set(digest(token), expiresAt);
    return { token, expiresAt };
  }

  valid(token: string): boolean {
    const key = digest(token);
    const expiresAt = this.sessions.get(key);
    if (expiresAt === undefined) return false;
    if (expiresAt <= this.now()) {
      this.sessions.delete(key);
      return false;
    }
    return true;
  }

  revoke(token: string): void {
    this.sessions.delete(digest(token));
  }
}

/** The session token from a Cookie header, or null. */
export function sessionToken(cookieHeader: string | undefined): string | null {
  if (!cookieHeader) return null;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{20,100}$/.test(value) ? value : null;
    }
  }
  return null;
}
