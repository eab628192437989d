import { load, save } from './storage.js';

/** Where a visit came from (spec event table: source, medium, campaign, content, keywords). */
export type Attribution = Partial<Record<'source' | 'medium' | 'campaign' | 'content' | 'keywords', string>>;

/** A visit as localStorage keeps it between pages. */
interface Visit {
  /** Last activity, ms. */
  l: number;
  a: Attribution;
  /** Whole days between this visit's start and the previous visit's last activity, when there was one. */
  d?: number;
}

const VISIT_KEY = 'svc_visit';
/** A visit ends after 30 minutes without activity, as web analytics usually count it. */
export const VISIT_TIMEOUT_MS = 30 * 60 * 1000;
const DAY_MS = 86_400_000;
const SEARCH_ENGINES = /(?:^|\.)(google|bing|yahoo|duckduckgo|baidu|yandex|ecosia|qwant|naver|ask)\.[a-z.]+$/;
const UTM: [string, keyof Attribution][] = [
  ['utm_source', 'source'],
  ['utm_medium', 'medium'],
  ['utm_campaign', 'campaign'],
  ['utm_content', 'content'],
  ['utm_term', 'keywords'],
];

/**
 * The attribution a page view announces: its UTM parameters, else its referrer (a search engine →
 * `organic` with the engine's name and query, another site → `referral` with its host), else `direct`
 * when there is no referrer. Undefined for a referrer on the same host: a page within the visit.
 */
export function attributionOf(href: string, referrer: string): Attribution | undefined {
  const url = new URL(href);
  const utm: Attribution = {};
  for (const [param, field] of UTM) {
    const value = url.searchParams.get(param);
    if (value) utm[field] = value;
  }
  if (Object.keys(utm).length) return utm;
  if (!referrer) return { source: 'direct', medium: 'direct' };
  let from: URL;
  try {
    from = new URL(referrer);
  } catch {
    return { source: 'direct', medium: 'direct' };
  }
  if (from.hostname === url.hostname) return undefined;
  const engine = SEARCH_ENGINES.exec(from.hostname);
  if (!engine) return { source: from.hostname, medium: 'referral' };
  const keywords = from.searchParams.get('q') ?? from.searchParams.get('p') ?? from.searchParams.get('text');
  return { source: engine[1]!, medium: 'organic', ...(keywords ? { keywords } : {}) };
}

/** The visit this page belongs to, and whether this page started it (`landing`). */
export interface PageVisit {
  landing: boolean;
  attribution: Attribution;
  daysSinceLastVisit?: number;
  /** Records activity now, so that the visit lasts while the person acts. */
  touch(now: number): void;
}

/**
 * Reads the visit at page load: a new one starts after 30 minutes of inactivity, or when the page
 * comes from a campaign or another site than the visit did.
 */
export function openVisit(win: Window, now: number): PageVisit {
  const previous = load<Visit>(win, VISIT_KEY);
  const announced = attributionOf(win.location.href, win.document.referrer);
  const expired = !previous || now - previous.l > VISIT_TIMEOUT_MS;
  const redirected =
    announced !== undefined &&
    announced.medium !== 'direct' &&
    JSON.stringify(announced) !== JSON.stringify(previous?.a);
  const landing = expired || redirected;
  const visit: Visit =
    landing || !previous
      ? {
          l: now,
          a: announced ?? { source: 'direct', medium: 'direct' },
          ...(previous ? { d: Math.floor((now - previous.l) / DAY_MS) } : {}),
        }
      : previous;
  const touch = (at: number) => {
    visit.l = at;
    save(win, VISIT_KEY, visit);
  };
  touch(now);
  return { landing, attribution: visit.a, daysSinceLastVisit: visit.d, touch };
}

/** The page fields of the spec's event table that the browser knows. */
export function pageFields(win: Window): Record<string, string> {
  const { location, document, navigator } = win;
  const fields: Record<string, string> = {
    channel: 'web',
    ua: navigator.userAgent,
    title: document.title,
    hostname: location.hostname,
    page: location.pathname,
    language: navigator.language,
    character_set: document.characterSet,
  };
  if (document.referrer) fields.referrer = document.referrer;
  return fields;
}
