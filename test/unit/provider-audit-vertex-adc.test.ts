import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gcloudAdcFile } from '../../src/providers/vertex/adc.js';
import { metadataBaseUrl } from '../../src/providers/vertex/metadata-server.js';

describe("where Vertex's Application Default Credentials are looked for", () => {
  it("finds gcloud's file as google-auth-library does: CLOUDSDK_CONFIG, else ~/.config/gcloud, %APPDATA%\\gcloud on Windows", () => {
    expect(gcloudAdcFile({ HOME: '/home/me' }, 'linux')).toBe(join('/home/me', '.config', 'gcloud', 'application_default_credentials.json'));
    expect(gcloudAdcFile({ HOME: '/home/me', CLOUDSDK_CONFIG: '/etc/gcloud' }, 'linux')).toBe(join('/etc/gcloud', 'application_default_credentials.json'));
    expect(gcloudAdcFile({ APPDATA: 'C:/Users/me/AppData/Roaming', HOME: '/ignored' }, 'win32')).toBe(join('C:/Users/me/AppData/Roaming', 'gcloud', 'application_default_credentials.json'));
    expect(gcloudAdcFile({}, 'linux')).toBeNull();
  });

  it('asks metadata.google.internal, or the host[:port] (or URL) GCE_METADATA_HOST names', () => {
    expect(metadataBaseUrl({})).toBe('http://metadata.google.internal/computeMetadata/v1');
    expect(metadataBaseUrl({ GCE_METADATA_HOST: '127.0.0.1:8085' })).toBe('http://127.0.0.1:8085/computeMetadata/v1');
    expect(metadataBaseUrl({ GCE_METADATA_HOST: 'https://metadata.test/' })).toBe('https://metadata.test/computeMetadata/v1');
  });
});
