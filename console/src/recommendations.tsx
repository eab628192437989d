import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';
import { SubmitWithAnswer } from './new-object.js';
import type { RecommendationRules as Rules } from '../../libs/recommendations/src/recommendation-rules.shape.js';

interface RulesView {
  rules: Rules;
  boolean_fields: string[];
}

/** The form's state: text as typed, turned into rules on save. */
interface Form {
  categories: string;
  image: boolean;
  price: boolean;
  min: string;
  max: string;
  mustBeTrue: string[];
}

const formOf = (r: Rules): Form => ({
  categories: (r.exclude_categories ?? []).join('\n'),
  image: r.require_image ?? false,
  price: r.require_price ?? false,
  min: r.min_price === undefined ? '' : String(r.min_price),
  max: r.max_price === undefined ? '' : String(r.max_price),
  mustBeTrue: r.require_true ?? [],
});

/** Only the rules set: an empty form removes them all. A price that is no number goes as typed (refused). */
function rulesOf(f: Form): Record<string, unknown> {
  const rules: Record<string, unknown> = {};
  const categories = f.categories
    .split('\n')
    .map((c) => c.trim())
    .filter(Boolean);
  if (categories.length) rules.exclude_categories = categories;
  if (f.image) rules.require_image = true;
  if (f.price) rules.require_price = true;
  const price = (text: string) => (Number.isFinite(Number(text)) ? Number(text) : text);
  if (f.min.trim()) rules.min_price = price(f.min.trim());
  if (f.max.trim()) rules.max_price = price(f.max.trim());
  if (f.mustBeTrue.length) rules.require_true = f.mustBeTrue;
  return rules;
}

/**
 * The account's recommendation rules, applied to every answer of `GET /v3/recommendations/products`:
 * the admin API's rules and checks, for this account.
 */
export function RecommendationsPage() {
  const [view, setView] = useState<RulesView>();
  const [form, setForm] = useState<Form>(formOf({}));
  const [error, setError] = useState<string>();
  const [message, setMessage] = useState<string | null>(null);
  useEffect(() => {
    call<RulesView>('GET', 'recommendation-rules').then(
      (v) => {
        setView(v);
        setForm(formOf(v.rules));
      },
      (e: Error) => setError(e.message),
    );
  }, []);
  if (error) return <p class="error">{error}</p>;
  if (!view) return <p>Loading…</p>;
  const save = async (e: Event) => {
    e.preventDefault();
    setMessage(null);
    try {
      const saved = await call<RulesView>('PUT', 'recommendation-rules', rulesOf(form));
      setView(saved);
      setForm(formOf(saved.rules));
      setMessage('Saved: every recommendation answer applies them within 5 seconds.');
    } catch (err) {
      setMessage((err as Error).message);
    }
  };
  const toggle = (field: string, on: boolean) =>
    setForm({
      ...form,
      mustBeTrue: on ? [...form.mustBeTrue, field] : form.mustBeTrue.filter((f) => f !== field),
    });
  return (
    <section aria-label="Recommendations">
      <p>
        Products these rules leave out are never recommended, whichever kind of recommendation. A category
        leaves out itself and everything beneath it (<code>Electronics &gt; Computers</code> also leaves out{' '}
        <code>Electronics &gt; Computers &gt; Laptops</code>).
      </p>
      <form class="new-field" onSubmit={(e) => void save(e)} data-testid="recommendation-rules">
        <label>
          Excluded categories (one a line)
          <textarea
            name="exclude_categories"
            rows={4}
            value={form.categories}
            onInput={(e) => setForm({ ...form, categories: e.currentTarget.value })}
          />
        </label>
        <label>
          <input
            type="checkbox"
            name="require_image"
            checked={form.image}
            onChange={(e) => setForm({ ...form, image: e.currentTarget.checked })}
          />{' '}
          Only products with an image
        </label>
        <label>
          <input
            type="checkbox"
            name="require_price"
            checked={form.price}
            onChange={(e) => setForm({ ...form, price: e.currentTarget.checked })}
          />{' '}
          Only products with a price
        </label>
        <label>
          Lowest price
          <input
            name="min_price"
            inputMode="decimal"
            value={form.min}
            onInput={(e) => setForm({ ...form, min: e.currentTarget.value })}
          />
        </label>
        <label>
          Highest price
          <input
            name="max_price"
            inputMode="decimal"
            value={form.max}
            onInput={(e) => setForm({ ...form, max: e.currentTarget.value })}
          />
        </label>
        {view.boolean_fields.length ? (
          <fieldset>
            <legend>Must be true</legend>
            {view.boolean_fields.map((field) => (
              <label key={field}>
                <input
                  type="checkbox"
                  name="require_true"
                  value={field}
                  checked={form.mustBeTrue.includes(field)}
                  onChange={(e) => toggle(field, e.currentTarget.checked)}
                />{' '}
                <code>{field}</code>
              </label>
            ))}
          </fieldset>
        ) : (
          <p>No custom boolean product field (such as in_stock) to require yet.</p>
        )}
        <SubmitWithAnswer label="Save rules" answer={message} testId="rules-message" />
      </form>
    </section>
  );
}
