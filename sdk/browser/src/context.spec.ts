import { attributionOf, openVisit, pageFields, VISIT_TIMEOUT_MS } from './context.js';
import { storageOf, testWindow } from './test-window.js';

describe('attributionOf', () => {
  it('takes the UTM parameters first', () => {
    expect(
      attributionOf(
        'https://shop.example/a?utm_source=news&utm_medium=email&utm_campaign=spring&utm_content=hero&utm_term=red+lamps',
        'https://www.google.com/search?q=x',
      ),
    ).toEqual({
      source: 'news',
      medium: 'email',
      campaign: 'spring',
      content: 'hero',
      keywords: 'red lamps',
    });
  });

  it('names a search engine as organic, with its query as keywords', () => {
    expect(attributionOf('https://shop.example/', 'https://www.google.co.uk/search?q=lamps')).toEqual({
      source: 'google',
      medium: 'organic',
      keywords: 'lamps',
    });
    expect(attributionOf('https://shop.example/', 'https://duckduckgo.com/')).toEqual({
      source: 'duckduckgo',
      medium: 'organic',
    });
  });

  it('names another site as a referral, and no referrer as direct', () => {
    expect(attributionOf('https://shop.example/', 'https://blog.example.org/post')).toEqual({
      source: 'blog.example.org',
      medium: 'referral',
    });
    expect(attributionOf('https://shop.example/', '')).toEqual({ source: 'direct', medium: 'direct' });
  });

  it('announces nothing for a page reached from the same site', () => {
    expect(attributionOf('https://shop.example/b', 'https://shop.example/a')).toBeUndefined();
  });
});

describe('openVisit', () => {
  const t0 = Date.UTC(2026, 0, 10, 12);

  it('lands with the campaign, keeps it on the next page, and counts days since the last visit', async () => {
    const first = testWindow(
      'https://shop.example/?utm_source=news&utm_medium=email',
      'https://mail.example/',
    );
    const landing = openVisit(first.win, t0);
    expect(landing).toMatchObject({ landing: true, attribution: { source: 'news', medium: 'email' } });
    expect(landing.daysSinceLastVisit).toBeUndefined();

    const second = testWindow('https://shop.example/lamps', 'https://shop.example/', storageOf(first.win));
    const next = openVisit(second.win, t0 + 60_000);
    expect(next).toMatchObject({ landing: false, attribution: { source: 'news', medium: 'email' } });
    expect(next.daysSinceLastVisit).toBeUndefined();

    // Three days later, typed in: a new, direct visit.
    const later = testWindow('https://shop.example/', '', storageOf(second.win));
    const back = openVisit(later.win, t0 + 60_000 + 3 * 86_400_000 + 5000);
    expect(back).toMatchObject({ landing: true, attribution: { source: 'direct', medium: 'direct' } });
    expect(back.daysSinceLastVisit).toBe(3);
    await Promise.all([first.close(), second.close(), later.close()]);
  });

  it('starts a new visit after 30 minutes without activity, or from another campaign', async () => {
    const first = testWindow('https://shop.example/', '');
    openVisit(first.win, t0);
    const idle = testWindow('https://shop.example/b', 'https://shop.example/', storageOf(first.win));
    expect(openVisit(idle.win, t0 + VISIT_TIMEOUT_MS + 1).landing).toBe(true);
    const campaign = testWindow('https://shop.example/?utm_source=ads', '', storageOf(idle.win));
    expect(openVisit(campaign.win, t0 + VISIT_TIMEOUT_MS + 2)).toMatchObject({
      landing: true,
      attribution: { source: 'ads' },
      daysSinceLastVisit: 0,
    });
    await Promise.all([first.close(), idle.close(), campaign.close()]);
  });
});

describe('pageFields', () => {
  it('reads the page: channel web, user agent, title, host, path, referrer, language, character set', async () => {
    const { win, close } = testWindow('https://shop.example/lamps/red?x=1#top', 'https://blog.example.org/');
    expect(pageFields(win)).toEqual({
      channel: 'web',
      ua: win.navigator.userAgent,
      title: 'Test page',
      hostname: 'shop.example',
      page: '/lamps/red',
      referrer: 'https://blog.example.org/',
      language: win.navigator.language,
      character_set: 'UTF-8',
    });
    await close();
  });
});
