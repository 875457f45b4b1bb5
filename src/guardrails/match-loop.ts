/**
 * The one loop every regex-based detector uses to walk its matches. Two things it guarantees:
 *
 * - After a candidate the detector rejects (a card number failing Luhn, an IBAN failing mod-97), the search goes on
 *   from the candidate's start + 1, not from its end. So whether a position starts a finding depends only on the
 *   text around it, never on where an earlier, rejected candidate happened to stop: the stream guard's rescans of
 *   a window then find exactly what a scan of the whole text finds.
 * - Together with the house rule for built-in patterns (every quantifier bounded, and a negative look-behind at the
 *   start so that only the first position of a run of word characters can start a match), each attempt costs a
 *   bounded number of steps and the whole walk is linear in the text's length, however hostile the text.
 */

/**
 * Calls `accept` for each match of the global (or sticky) regex `re` starting at or after `from`. `accept` returns
 * the index to resume from (usually the accepted finding's end), or `null` to reject the candidate and resume at
 * its start + 1. Zero-length matches are skipped.
 */
export function forEachMatch(re: RegExp, text: string, from: number, accept: (match: RegExpExecArray) => number | null): void {
  re.lastIndex = from;
  for (;;) {
    const match = re.exec(text);
    if (match === null) return;
    const resumeAt = match[0].length === 0 ? null : accept(match);
    re.lastIndex = resumeAt === null ? match.index + 1 : Math.max(resumeAt, match.index + 1);
    if (re.lastIndex > text.length) return;
  }
}
