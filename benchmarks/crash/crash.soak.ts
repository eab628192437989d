import { join } from 'node:path';
import { args } from '../lib/stats.js';
import { runSoak } from './soak.js';

/**
 * `npm run soak:crash`: the repeated-SIGKILL soak of the embedded server (see soak.ts). Prints the
 * figures as JSON; exits 1 if anything acknowledged was lost or doubled.
 */
const opt = args({ events: 200_000, kills: 20, batch: 200, clients: 4, seed: 7, 'api-sample': 2000 });
const result = await runSoak({
  events: Number(opt.events),
  kills: Number(opt.kills),
  batch: Number(opt.batch),
  clients: Number(opt.clients),
  seed: Number(opt.seed),
  apiSample: Number(opt['api-sample']),
  root: join(import.meta.dirname, '..', '..', '..'),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
const { events, customers } = result;
const broken = events.lost + events.doubled + customers.lost + customers.doubled + customers.apiMissing;
process.exit(broken === 0 ? 0 : 1);
