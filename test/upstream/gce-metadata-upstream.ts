// A scripted Google Cloud metadata server (GCE, GKE Workload Identity, Cloud Run): the attached service account's
// access token and the host's project id, under /computeMetadata/v1, only to requests with `Metadata-Flavor: Google`
// (answered with that header, as Google's is). Its tokens come from `issue` (the scripted Vertex AI's, so Vertex takes them).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MetadataServer {
  /** host:port, what GCE_METADATA_HOST holds. */
  host: string;
  /** Every request, as `METHOD /raw/url` with the Metadata-Flavor header it came with. */
  received: Array<{ url: string; flavor: string | undefined }>;
  /** The access tokens handed out, in order. */
  tokens: string[];
  project: string;
  /** Seconds each token is said to live (what Google's metadata server answers in expires_in). */
  expiresIn: number;
  close(): Promise<void>;
}

const TOKEN_PATH = '/computeMetadata/v1/instance/service-accounts/default/token';

export async function startMetadataServer(issue: () => string, project = 'metadata-project'): Promise<MetadataServer> {
  const state = {
    host: '',
    received: [] as Array<{ url: string; flavor: string | undefined }>,
    tokens: [] as string[],
    project,
    expiresIn: 3599,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const flavor = req.headers['metadata-flavor'];
    state.received.push({ url: `${req.method ?? 'GET'} ${req.url ?? '/'}`, flavor: typeof flavor === 'string' ? flavor : undefined });
    const path = (req.url ?? '/').split('?')[0];
    const headers = { 'metadata-flavor': 'Google', server: 'Metadata Server for VM' };
    if (flavor !== 'Google') {
      res.writeHead(403, { ...headers, 'content-type': 'text/html' });
      return void res.end('Missing required header: Metadata-Flavor');
    }
    if (req.method === 'GET' && path === TOKEN_PATH) {
      const token = issue();
      state.tokens.push(token);
      res.writeHead(200, { ...headers, 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ access_token: token, expires_in: state.expiresIn, token_type: 'Bearer' }));
    }
    if (req.method === 'GET' && path === '/computeMetadata/v1/project/project-id') {
      res.writeHead(200, { ...headers, 'content-type': 'application/text' });
      return void res.end(state.project);
    }
    res.writeHead(404, { ...headers, 'content-type': 'text/html' });
    res.end('Not Found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return state;
}
