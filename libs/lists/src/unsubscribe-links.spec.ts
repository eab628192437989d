import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@cdp/config';
import { FileMetadataStore } from '@cdp/metadata/file';
import { signUnsubscribeToken, verifyUnsubscribeToken } from './unsubscribe-link.token.js';
import { UnsubscribeLinks } from './unsubscribe-links.service.js';

const SECRET = 'a-secret-of-at-least-thirty-two-characters';
const claims = { account: 'acc', email: 'ann@x.com', listIds: ['news'], expiresAt: 2_000 };

describe('unsubscribe link tokens', () => {
  it('verifies its own token until it expires (the clock is a parameter)', () => {
    const token = signUnsubscribeToken(SECRET, claims);
    expect(verifyUnsubscribeToken(SECRET, token, 1_999)).toEqual({ ok: true, claims });
    expect(verifyUnsubscribeToken(SECRET, token, 2_000)).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuses a token changed in any byte, signed with another secret, or malformed', () => {
    const token = signUnsubscribeToken(SECRET, claims);
    for (let i = 0; i < token.length; i++) {
      if (token[i] === '.') continue;
      const changed = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      expect(verifyUnsubscribeToken(SECRET, changed, 0)).toEqual({ ok: false, reason: 'invalid' });
    }
    expect(verifyUnsubscribeToken(`${SECRET}!`, token, 0)).toEqual({ ok: false, reason: 'invalid' });
    for (const bad of ['', '.', 'abc', 'a.b.c', `${token}.x`])
      expect(verifyUnsubscribeToken(SECRET, bad, 0)).toEqual({ ok: false, reason: 'invalid' });
  });
});

describe('UnsubscribeLinks', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'cdp-unsub-'));

  it('signs with the configured secret and a link lives for the configured time', async () => {
    const config = loadConfig({ CDP_UNSUBSCRIBE_SECRET: SECRET, CDP_UNSUBSCRIBE_LINK_TTL_SECONDS: '3600' });
    const links = new UnsubscribeLinks(config, new FileMetadataStore(dir()));
    const { token, expiresAt } = await links.sign({ account: 'a', email: 'e@x.com', listIds: [] }, 1_000);
    expect(expiresAt).toBe(1_000 + 3_600_000);
    expect(verifyUnsubscribeToken(SECRET, token, 1_000).ok).toBe(true);
    expect(await links.verify(token, expiresAt)).toEqual({ ok: false, reason: 'expired' });
  });

  it('without a configured secret, every instance shares one generated and kept in the metadata store', async () => {
    const config = loadConfig({});
    const metadata = new FileMetadataStore(dir());
    const [a, b] = [new UnsubscribeLinks(config, metadata), new UnsubscribeLinks(config, metadata)];
    const [fromA, fromB] = await Promise.all([
      a.sign({ account: 'x', email: 'e@x.com', listIds: [] }, 0),
      b.sign({ account: 'x', email: 'e@x.com', listIds: [] }, 0),
    ]);
    expect((await b.verify(fromA.token, 1)).ok).toBe(true);
    expect((await a.verify(fromB.token, 1)).ok).toBe(true);
    expect((await new UnsubscribeLinks(config, new FileMetadataStore(dir())).verify(fromA.token, 1)).ok).toBe(
      false,
    );
  });
});
