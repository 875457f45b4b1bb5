import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routing (`/#/logs?status=5xx`): the gateway serves one page at `/` and claims no other path, so `/v1`,
 * `/api` and unknown URLs keep the API's answers, and a filtered view is a link that can be shared.
 */
export interface Location {
  /** `/logs`, `/logs/<id>`; `/` for the overview. */
  path: string;
  query: URLSearchParams;
}

function read(): Location {
  const hash = window.location.hash.replace(/^#/, '') || '/';
  const [path = '/', search = ''] = hash.split('?', 2);
  return { path, query: new URLSearchParams(search) };
}

export function href(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const search = params.toString();
  return `#${path}${search ? `?${search}` : ''}`;
}

export function navigate(path: string, query: Record<string, string | undefined> = {}): void {
  window.location.hash = href(path, query);
}

export function useLocation(): Location {
  const [location, setLocation] = useState(read);
  useEffect(() => {
    const onChange = (): void => setLocation(read());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return location;
}
