/**
 * `import { AdminClient } from 'tollgate/admin'`: a typed client for the management API. Loads no gateway code
 * (only fetch), so a dashboard, a script or a CI job can use it without the gateway's dependencies.
 */
export { AdminApiError, AdminClient, type AdminClientOptions } from './client.js';
export type * from './types.js';
