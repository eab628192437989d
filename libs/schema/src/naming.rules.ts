/**
 * Naming rules of the schema API (spec "Schema API", naming rules): object and field names are lower
 * snake case, letters and digits, starting with a letter; object names are plural, aliases singular.
 */
export const MAX_NAME_LENGTH = 64;
export const MAX_DISPLAY_NAME_LENGTH = 1024;
export const MAX_DESCRIPTION_LENGTH = 1024;

const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

export const SNAKE_CASE_REASON =
  'must be lower snake case: letters a-z, digits and single _, starting with a letter';

/** Why a name breaks the snake-case rule, or undefined when it keeps it. */
export function snakeCaseProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.trim() === '') return 'is required';
  if (name.length > MAX_NAME_LENGTH) return `must NOT have more than ${MAX_NAME_LENGTH} characters`;
  if (!SNAKE.test(name)) return SNAKE_CASE_REASON;
  return undefined;
}

/**
 * English plural by its last word's ending: `s`, but not `ss`, `us` or `is` (class, status, analysis
 * are singular). Irregular plurals (people, data) are not recognised: name such objects `persons`.
 */
export function isPlural(name: string): boolean {
  const last = name.split('_').pop() ?? '';
  return /s$/.test(last) && !/(ss|us|is)$/.test(last);
}

/** Why a name cannot name a new object (snake case, plural), or undefined. */
export function objectNameProblem(name: unknown): string | undefined {
  return snakeCaseProblem(name) ?? (isPlural(name as string) ? undefined : 'must be plural (end in s)');
}

/** Why a name cannot be an object's alias (snake case, singular), or undefined. */
export function aliasProblem(alias: unknown): string | undefined {
  return (
    snakeCaseProblem(alias) ??
    (isPlural(alias as string) ? 'must be singular (the object name is the plural)' : undefined)
  );
}

/** Why a display name cannot be used, or undefined. */
export function displayNameProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') return 'is required';
  if ([...value].length > MAX_DISPLAY_NAME_LENGTH)
    return `must NOT have more than ${MAX_DISPLAY_NAME_LENGTH} characters`;
  return undefined;
}

/** Display names are compared as a reader sees them: case and surrounding spaces do not tell two apart. */
export function displayKey(value: string): string {
  return value.trim().toLowerCase();
}
