import { constants, createHash, createPrivateKey, randomUUID, sign, X509Certificate, type KeyObject } from 'node:crypto';

/** How long an assertion is good for: Microsoft asks for a short one (5 to 10 minutes after nbf). */
const ASSERTION_LIFETIME_S = 600;

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;

/**
 * The key and certificate of an app registration's certificate credential, from one PEM file (the key and the
 * certificate, as Azure's SDKs read AZURE_CLIENT_CERTIFICATE_PATH). Throws a message naming what is missing, never
 * the file's content.
 */
export function readCertificateCredential(pem: string): { key: KeyObject; thumbprint: string } {
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem)) throw new Error('its private key is encrypted (a key without a passphrase is needed)');
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new Error('it holds no private key in PEM');
  }
  if (key.asymmetricKeyType !== 'rsa') throw new Error(`its private key is ${key.asymmetricKeyType ?? 'not RSA'}; Entra takes RSA certificates`);
  const block = CERTIFICATE_BLOCK.exec(pem)?.[0];
  if (!block) throw new Error('it holds no certificate in PEM beside the key');
  const cert = new X509Certificate(block);
  if (!cert.checkPrivateKey(key)) throw new Error("its first certificate is not the private key's");
  return { key, thumbprint: createHash('sha256').update(cert.raw).digest('base64url') };
}

const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * A client assertion as Microsoft's identity platform documents certificate credentials: a JWT signed with PS256,
 * the certificate named by its SHA-256 thumbprint (x5t#S256), for the token endpoint it is sent to (aud), issued by
 * and about the app (iss, sub), with a fresh jti.
 */
export function certificateAssertion(credential: { key: KeyObject; thumbprint: string }, clientId: string, tokenUrl: string, now = Date.now()): string {
  const issuedAt = Math.floor(now / 1000);
  const header = base64url({ alg: 'PS256', typ: 'JWT', 'x5t#S256': credential.thumbprint });
  const claims = base64url({ aud: tokenUrl, iss: clientId, sub: clientId, jti: randomUUID(), nbf: issuedAt, iat: issuedAt, exp: issuedAt + ASSERTION_LIFETIME_S });
  const signature = sign('sha256', Buffer.from(`${header}.${claims}`), { key: credential.key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
  return `${header}.${claims}.${signature.toString('base64url')}`;
}
