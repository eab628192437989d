import { readFileSync } from 'node:fs';

/**
 * Where each event's time goes on the main thread (and, given their profiles, on the ingest codec's
 * worker threads: their busy time over the whole run, per event): a V8 CPU profile of `bench:ingest`
 * (`node --cpu-prof --cpu-prof-dir=DIR dist/benchmarks/ingest/ingest.bench.js ...`) cut to the
 * end-to-end window (the first request parsed to the last batch processed) and bucketed by stage: each
 * sample goes to the innermost frame of its stack that names a stage. Prints ms and µs per event.
 *
 *   node dist/benchmarks/ingest/profile-stages.js <file.cpuprofile> <events in the window>
 *
 * The store's own work (chDB parsing and writing the insert) runs on libuv threads, outside this
 * profile: the raw-store baseline (store-baseline.ts) measures it.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Stage name, and what its frames look like (`function url`); the first match from the inside wins. */
const STAGES: [string, RegExp][] = [
  ['API: body parse (JSON.parse, UTF-8 checks)', /^parseJsonBody /],
  ['API: validate + normalize', /events\.validator|normalizeEvent|BatchPipe|validate\d+ /],
  ['API: records encode (JSON.stringify)', /events-codec/],
  ['API: hand-off to the codec thread', /ingest-codec|events-body\.pipe/],
  ['processor: records decode (JSON.parse at delivery)', /^(decodeMessage|messageOf) /],
  [
    'bus: log write (stringify, write, fdatasync)',
    /local-log.*(publish|flush)|^(publish|publishEncoded|append|flush) .*local-log/,
  ],
  ['bus: settle (acks file, metrics)', /bus\.transport|local-log.*settle|^settle .*local-log|countResults/],
  ['processor: identity resolve', /identity\.step|resolution\.js|account-graph|memory-identity-index/],
  ['processor: apply profiles', /applyProfiles|memory-profile-state/],
  ['processor: row building', /event-row|ingest\.pipeline|store-rows|orders\.step|products\.step/],
  [
    'store: encode + insert call',
    /clickhouse\.store|row-encoding|chdb|dedup\.js|metered\.transport|step-writer/,
  ],
  ['API: HTTP, routing, auth', /fastify|node:_http|node:http|http-api|@nestjs/],
  ['benchmark itself (polls, clients)', /benchmarks\//],
];

const [file, events, ...threads] = process.argv.slice(2);
if (!file || !events)
  throw new Error('usage: profile-stages.js <main.cpuprofile> <events> [<worker thread .cpuprofile>...]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const frame = (id: number) => `${byId.get(id)!.callFrame.functionName} ${byId.get(id)!.callFrame.url}`;
const stack = function* (id: number) {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) yield at;
};

// From the first request handled to the last batch the processor touched.
let first = -1;
let last = -1;
profile.samples.forEach((id, i) => {
  for (const at of stack(id)) {
    const { functionName, url } = byId.get(at)!.callFrame;
    const request =
      functionName === 'parseJsonBody' || (functionName === 'ingest' && url.includes('events.controller'));
    if (first < 0 && request) first = i;
    if (first >= 0 && url.includes('ingest.pipeline')) {
      last = i;
      break;
    }
  }
});
if (first < 0) throw new Error('no request was parsed in this profile');

const totals = new Map<string, number>();
for (let i = first; i <= last; i++) {
  const id = profile.samples[i]!;
  const own = byId.get(id)!.callFrame.functionName;
  let stage = own === '(idle)' ? 'idle' : own === '(garbage collector)' ? 'garbage collector' : 'other';
  if (stage === 'other')
    for (const at of stack(id)) {
      const found = STAGES.find(([, pattern]) => pattern.test(frame(at)));
      if (found) {
        stage = found[0];
        break;
      }
    }
  totals.set(stage, (totals.get(stage) ?? 0) + profile.timeDeltas[i]!);
}
const all = [...totals.values()].reduce((a, b) => a + b, 0);
process.stdout.write(`window: ${(all / 1e6).toFixed(1)} s of main thread, ${events} events\n`);
for (const [stage, micros] of [...totals].sort((a, b) => b[1] - a[1]))
  process.stdout.write(
    `${stage.padEnd(46)} ${(micros / 1000).toFixed(0).padStart(7)} ms  ${((micros / all) * 100).toFixed(1).padStart(5)} %  ${(micros / Number(events)).toFixed(2).padStart(6)} µs/event\n`,
  );

// The codec threads (IngestCodec): each `--cpu-prof` thread writes its own profile; busy time per event.
for (const thread of threads) {
  const p = JSON.parse(readFileSync(thread, 'utf8')) as CpuProfile;
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  let busy = 0;
  let gc = 0;
  p.samples.forEach((id, i) => {
    const name = nodes.get(id)!.callFrame.functionName;
    if (name === '(idle)' || name === '(program)') return;
    busy += p.timeDeltas[i]!;
    if (name === '(garbage collector)') gc += p.timeDeltas[i]!;
  });
  process.stdout.write(
    `worker thread ${thread.split('/').pop()}: busy ${(busy / 1000).toFixed(0)} ms (GC ${(gc / 1000).toFixed(0)} ms), ${(busy / Number(events)).toFixed(2)} µs/event\n`,
  );
}
