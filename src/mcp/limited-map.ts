/**
 * `items` mapped through `fn` with at most `limit` calls running at once, results in the items' order. An agent turn's
 * tool calls go through it: a model may ask for hundreds in one turn, and all at once they would hit the MCP servers
 * (and the gateway's sockets) in one burst, whatever the servers can take.
 */
export async function limitedMap<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
