import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A private certificate authority and one server certificate it signed, as files and PEM text. */
export interface TestCa {
  /** The CA certificate (PEM file): what a client must trust. */
  caFile: string;
  caPem: string;
  /** The server's key and certificate, for 127.0.0.1, localhost and the `hosts` it was made for. */
  key: Buffer;
  cert: Buffer;
  /** Deletes the folder. */
  remove(): void;
}

/**
 * Makes a CA and a server certificate it signs with the openssl command, in a temporary folder: a chain as a
 * company CA issues it, not a self-signed leaf, so a client that trusts the CA (and only that) verifies it.
 */
export function makeTestCa(name = 'tollgate test CA', hosts: string[] = []): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-ca-'));
  const file = (leaf: string) => join(dir, leaf);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', ...ec, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(file('server.ext'), `subjectAltName=IP:127.0.0.1,DNS:localhost${hosts.map((host) => `,DNS:${host}`).join('')}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file('server.pem'), '-days', '2', '-extfile', file('server.ext'));
  return {
    caFile: file('ca.pem'),
    caPem: readFileSync(file('ca.pem'), 'utf8'),
    key: readFileSync(file('server.key')),
    cert: readFileSync(file('server.pem')),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
