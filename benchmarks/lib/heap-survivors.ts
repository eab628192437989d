import { writeFileSync } from 'node:fs';

/**
 * What a running process allocates that outlives a young-generation collection: V8's sampling heap
 * profiler, attached over the inspector, keeping the samples of objects a scavenge did not free (still
 * alive, or freed only by a mark-compact later). Such allocations are what fills the old generation and
 * makes mark-compacts frequent; a request's own objects should not be among them. Prints the bytes by
 * allocating function and by the last frames of their stacks.
 *
 *   BENCH_NODE_ARGS=--inspect=127.0.0.1:0 npm run bench:segments:scaled -- --seconds 20 --rounds 1
 *   node dist/benchmarks/lib/heap-survivors.js <the role's ws://… URL from its stderr> <seconds> [out.json]
 *
 * docs/benchmarks.md "Segments and GraphQL" has what it found (pretenuring).
 */
interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface SamplingNode {
  callFrame: CallFrame;
  selfSize: number;
  children: SamplingNode[];
}

const [url, seconds = '10', out] = process.argv.slice(2);
if (!url) {
  process.stderr.write('usage: heap-survivors.js <inspector ws:// URL> [seconds] [out.json]\n');
  process.exit(2);
}

const socket = new WebSocket(url);
const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
let nextId = 0;
socket.onmessage = (message: MessageEvent) => {
  const reply = JSON.parse(String(message.data)) as { id?: number; result?: unknown; error?: unknown };
  const call = reply.id === undefined ? undefined : waiting.get(reply.id);
  if (!call) return;
  waiting.delete(reply.id!);
  if (reply.error) call.reject(new Error(JSON.stringify(reply.error)));
  else call.resolve(reply.result);
};
function send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
  const id = ++nextId;
  return new Promise<T>((resolve, reject) => {
    waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
    socket.send(JSON.stringify({ id, method, params }));
  });
}

await new Promise((resolve, reject) => {
  socket.onopen = resolve;
  socket.onerror = () => reject(new Error(`cannot reach the inspector at ${url}`));
});
await send('HeapProfiler.enable');
await send('HeapProfiler.startSampling', {
  samplingInterval: 2048,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: false,
});
await new Promise((resolve) => setTimeout(resolve, Number(seconds) * 1000));
const { profile } = await send<{ profile: { head: SamplingNode } }>('HeapProfiler.stopSampling');
socket.close();
if (out) writeFileSync(out, JSON.stringify(profile));

const frame = (f: CallFrame) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, '')}:${f.lineNumber}`;
const bySite = new Map<string, number>();
const byStack = new Map<string, number>();
let total = 0;
const walk = (node: SamplingNode, stack: string[]): void => {
  const here = [...stack, frame(node.callFrame)];
  if (node.selfSize > 0) {
    total += node.selfSize;
    const site = here[here.length - 1]!;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    const tail = here.slice(-5).reverse().join(' < ');
    byStack.set(tail, (byStack.get(tail) ?? 0) + node.selfSize);
  }
  for (const child of node.children) walk(child, here);
};
walk(profile.head, []);

const top = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${(v / 1e6).toFixed(1).padStart(8)} MB  ${k}`)
    .join('\n');
process.stdout.write(
  `outlived a young collection: ${(total / 1e6).toFixed(1)} MB in ${seconds} s\n\n` +
    `by allocating function:\n${top(bySite, 25)}\n\nby stack (innermost first):\n${top(byStack, 15)}\n`,
);
