import type { Delivery } from '@cdp/bus';
import type { OptOutMessage } from '@cdp/contracts';
import type { ClickHouseStore } from '@cdp/store';
import { deliveryOf, eventsMessage, newProcessor, tempChdbStore } from './testing/processor-harness.js';

/**
 * Opt-outs through the pipeline as the bus hands them over, several to a batch: the store redacts
 * once per table for the account's whole run (issue 31), and a crash before the batch's commit
 * loses none of them.
 */
describe('IngestPipeline: a batch of opt-outs', () => {
  let chdb: ClickHouseStore;
  beforeAll(() => {
    chdb = tempChdbStore('optout-batch');
  });
  afterAll(() => chdb.close());

  let n = 0;
  async function harness() {
    const redactions: string[][] = [];
    let commitsToFail = 0;
    const store = new Proxy(chdb, {
      get(target, prop) {
        if (prop === 'redactCustomers')
          return (account: string, ids: readonly string[]) => {
            redactions.push([...ids].sort());
            return target.redactCustomers(account, ids);
          };
        if (prop === 'commit')
          return (account: string, messages: readonly string[]) => {
            if (commitsToFail-- > 0)
              return Promise.reject(new Error('the store went away before the commit'));
            return target.commit(account, messages);
          };
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const built = await newProcessor(store);
    const account = `optb${++n}${Date.now()}`;
    const emails = ['a', 'b', 'c'].map((c) => `${c}-secret@x.com`);
    for (const email of emails)
      await built.pipeline.process([
        deliveryOf(eventsMessage(account, [{ type: 'pageview', identifiers: { email }, data: { email } }])),
      ]);
    const customers = await Promise.all(
      emails.map(async (value) => (await built.identity.lookup(account, { kind: 'email', value }))!),
    );
    const optouts = emails.map((value, i): Delivery & { message: OptOutMessage } =>
      deliveryOf({
        id: `optout-${account}-${i}`,
        account,
        kind: 'optout',
        receivedAt: Date.now(),
        key: 'private:k1',
        records: [
          {
            requester: 'dpo@x.com',
            sent: [{ kind: 'email', value }],
            customers: [customers[i]!],
            identifiers: [{ kind: 'email', value }],
          },
        ],
      }),
    );
    const secrets = async () =>
      Number(
        (
          await chdb.query<{ n: number }>(
            account,
            `SELECT count() AS n FROM {db}.events WHERE identifiers['email'] LIKE '%secret%'`,
          )
        )[0]!.n,
      );
    const failNextCommit = () => (commitsToFail = 1);
    return { ...built, account, customers, optouts, redactions, secrets, failNextCommit };
  }

  it('redacts every customer of the batch with one redaction for the account, all rows cleared', async () => {
    const h = await harness();
    expect(await h.secrets()).toBe(3);
    const results = await h.pipeline.process(h.optouts);
    expect(results.map((r) => r.result.type)).toEqual(['ok', 'ok', 'ok']);
    expect(h.redactions).toEqual([[...h.customers].sort()]);
    expect(await h.secrets()).toBe(0);
    const audit = await chdb.query<{ msg_id: string }>(
      h.account,
      'SELECT msg_id FROM {db}.optout_requests ORDER BY msg_id',
    );
    expect(audit.map((r) => r.msg_id)).toEqual(h.optouts.map((d) => d.message.id).sort());
    expect(await chdb.unfinishedMessages(h.account)).toEqual([]);
  });

  it('loses no opt-out to a crash before the commit: the batch fails whole, and its redelivery completes it', async () => {
    const h = await harness();
    h.failNextCommit();
    const failed = await h.pipeline.process(h.optouts);
    expect(failed.every((r) => r.result.type !== 'ok')).toBe(true);
    // Cut short between the writes: none of the three counts as finished.
    expect((await chdb.unfinishedMessages(h.account)).sort()).toEqual(
      h.optouts.map((d) => d.message.id).sort(),
    );
    const again = await h.pipeline.process(h.optouts.map((d) => ({ ...d, deliveryCount: 2 })));
    expect(again.map((r) => r.result.type)).toEqual(['ok', 'ok', 'ok']);
    expect(await h.secrets()).toBe(0);
    expect(await chdb.unfinishedMessages(h.account)).toEqual([]);
    const audit = await chdb.query<{ n: number }>(h.account, 'SELECT count() AS n FROM {db}.optout_requests');
    expect(Number(audit[0]!.n)).toBe(3);
    for (const c of h.customers) expect(await h.profiles.get(h.account, c)).toMatchObject({ redacted: true });
  });
});
