import { isJunkIdentifierValue } from './identifiers.js';

/**
 * Rules of the spec's customer table ("Customer fields", "Data types"): what a sent value must look
 * like. Phone numbers are stored as sent, never transformed.
 */

/** spec "Data types": anything, `@`, anything, `.`, anything. */
const EMAIL = /^[^@\s]+@[^\s]+\.[^\s]+$/u;

/** ISO 3166-1 alpha-3: the officially assigned codes. */
const COUNTRIES = new Set(
  (
    'ABW AFG AGO AIA ALA ALB AND ARE ARG ARM ASM ATA ATF ATG AUS AUT AZE BDI BEL BEN BES BFA BGD BGR BHR BHS BIH ' +
    'BLM BLR BLZ BMU BOL BRA BRB BRN BTN BVT BWA CAF CAN CCK CHE CHL CHN CIV CMR COD COG COK COL COM CPV CRI CUB ' +
    'CUW CXR CYM CYP CZE DEU DJI DMA DNK DOM DZA ECU EGY ERI ESH ESP EST ETH FIN FJI FLK FRA FRO FSM GAB GBR GEO ' +
    'GGY GHA GIB GIN GLP GMB GNB GNQ GRC GRD GRL GTM GUF GUM GUY HKG HMD HND HRV HTI HUN IDN IMN IND IOT IRL IRN ' +
    'IRQ ISL ISR ITA JAM JEY JOR JPN KAZ KEN KGZ KHM KIR KNA KOR KWT LAO LBN LBR LBY LCA LIE LKA LSO LTU LUX LVA ' +
    'MAC MAF MAR MCO MDA MDG MDV MEX MHL MKD MLI MLT MMR MNE MNG MNP MOZ MRT MSR MTQ MUS MWI MYS MYT NAM NCL NER ' +
    'NFK NGA NIC NIU NLD NOR NPL NRU NZL OMN PAK PAN PCN PER PHL PLW PNG POL PRI PRK PRT PRY PSE PYF QAT REU ROU ' +
    'RUS RWA SAU SDN SEN SGP SGS SHN SJM SLB SLE SLV SMR SOM SPM SRB SSD STP SUR SVK SVN SWE SWZ SXM SYC SYR TCA ' +
    'TCD TGO THA TJK TKL TKM TLS TON TTO TUN TUR TUV TWN TZA UGA UKR UMI URY USA UZB VAT VCT VEN VGB VIR VNM VUT ' +
    'WLF WSM YEM ZAF ZMB ZWE'
  ).split(' '),
);

export function isEmail(value: string): boolean {
  return EMAIL.test(value);
}

const zones = new Map<string, boolean>();
/** A tz-database name, as the runtime's ICU knows them (aliases such as `US/Pacific` included). */
export function isTimeZone(value: string): boolean {
  let known = zones.get(value);
  if (known === undefined) {
    try {
      known =
        value.length > 0 && !/^[+-]|^\d/.test(value) && !!new Intl.DateTimeFormat('en', { timeZone: value });
    } catch {
      known = false;
    }
    if (zones.size < 10_000) zones.set(value, known);
  }
  return known;
}

export function isUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const { protocol, hostname } = new URL(value);
  return (protocol === 'http:' || protocol === 'https:') && hostname.length > 0;
}

/** Why a customer field's value is refused, or undefined when it is fine. Null and "" (unset) always pass. */
export function customerFieldProblem(field: string, value: unknown): string | undefined {
  if (value === null || value === '' || typeof value !== 'string') return undefined;
  switch (field) {
    case 'email':
      // A junk value (`anonymous`, `null`…) is no email and no identifier; it is ignored, not refused.
      return isEmail(value) || isJunkIdentifierValue(value)
        ? undefined
        : 'must be an email address (anything@anything.anything)';
    case 'gender':
      return value === 'M' || value === 'F' ? undefined : 'must be M or F';
    case 'country':
      return COUNTRIES.has(value.toUpperCase()) ? undefined : 'must be an ISO 3166-1 alpha-3 country code';
    case 'timezone':
      return isTimeZone(value) ? undefined : 'must be a tz database time zone name, such as Europe/Paris';
    case 'image_url':
      return isUrl(value) ? undefined : 'must be a valid http or https URL';
    default:
      return undefined;
  }
}

/** How a valid value is stored: country codes in upper case; everything else as sent. */
export function canonicalCustomerValue(field: string, value: string): string {
  return field === 'country' ? value.toUpperCase() : value;
}

/** Every refused customer field of a record (the sent attributes), as `{field, reason}`. */
export function customerFieldProblems(
  sent: Readonly<Record<string, unknown>>,
): { field: string; reason: string }[] {
  const out: { field: string; reason: string }[] = [];
  for (const [field, value] of Object.entries(sent)) {
    const reason = customerFieldProblem(field, value);
    if (reason) out.push({ field, reason });
  }
  return out;
}
