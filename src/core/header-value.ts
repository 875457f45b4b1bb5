/** A character sent as it is in a name's header: printable ASCII but `%` (which marks an encoded byte). */
const NEEDS_ENCODING = /[^\x20-\x24\x26-\x7e]/;
const ENCODED_RUN = /[^\x20-\x24\x26-\x7e]+/g;

/**
 * A name for a response header (x-tollgate-model and the like). Names such as a provider's model are not ours to
 * restrict, and Node refuses a header character above U+00FF (or a control): sent as it is, such a name made every
 * answer carrying it a 500. Anything outside printable ASCII, and `%`, goes percent-encoded as UTF-8 bytes, so
 * decodeURIComponent always gives the name back; a plain name (`gpt-4o-mini`) goes unchanged.
 */
export function headerSafeName(name: string): string {
  if (!NEEDS_ENCODING.test(name)) return name;
  // Buffer, not encodeURIComponent: a lone surrogate (possible in a JSON config) must not throw.
  return name.replace(ENCODED_RUN, (run) => {
    let encoded = '';
    for (const byte of Buffer.from(run, 'utf8')) encoded += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    return encoded;
  });
}
