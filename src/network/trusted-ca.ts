import { readFileSync } from 'node:fs';
import * as tls from 'node:tls';

/** The PEM certificates in a bundle's text, each with its BEGIN and END lines. */
export function pemCertificates(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * What Node trusts by default: its bundled roots, plus the NODE_EXTRA_CA_CERTS file it loaded at start. Giving a
 * TLS connection a `ca` list replaces that whole default store, so an extra bundle must be added to this list,
 * never used alone (the public providers' certificates would stop verifying).
 */
function defaultCertificates(): string[] {
  // Node 22.15+ says what its default store holds (system certificates too, under --use-system-ca).
  const fromNode = (tls as { getCACertificates?: (type: 'default') => string[] }).getCACertificates;
  if (fromNode) return fromNode('default');
  const extraFile = process.env.NODE_EXTRA_CA_CERTS;
  let extra: string[] = [];
  if (extraFile) {
    try {
      extra = pemCertificates(readFileSync(extraFile, 'utf8'));
    } catch {
      // Node warned at start that it could not read the file; it trusts none of it, and neither does this list.
    }
  }
  return [...tls.rootCertificates, ...extra];
}

/** The certificate list for TLS connections that trust `extraPem` besides everything Node trusts by default. */
export function trustedCertificates(extraPem: string): string[] {
  return [...defaultCertificates(), ...pemCertificates(extraPem)];
}
