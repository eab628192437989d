import { useState } from 'preact/hooks';
import { call, CallError } from './api.js';

const EMPTY = { name: '', alias: '', display_name: '', primary: '' };

/**
 * A custom object with its primary-key field, through the schema API's own service (the same checks and
 * reasons as `POST /v3/schema/objects`); more fields are added to it with the field form afterwards.
 */
export function NewObjectForm({ onCreated }: { onCreated: (name: string) => void }) {
  const [form, setForm] = useState(EMPTY);
  const [message, setMessage] = useState<string | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    try {
      const created = await call<{ name: string }>('POST', 'objects', {
        name: form.name,
        alias: form.alias,
        display_name: form.display_name,
        fields: [{ name: form.primary, display_name: form.primary, type: 'string', primary: true }],
      });
      setMessage(`Object ${created.name} created.`);
      setForm(EMPTY);
      onCreated(created.name);
    } catch (err) {
      setMessage(err instanceof CallError ? err.message : String(err));
    }
  };
  const input = (key: keyof typeof EMPTY, label: string, hint: string) => (
    <label>
      {label}
      <input
        name={key}
        required
        placeholder={hint}
        value={form[key]}
        onInput={(e) => setForm({ ...form, [key]: e.currentTarget.value })}
      />
    </label>
  );
  return (
    <form class="new-field new-object" onSubmit={(e) => void create(e)} data-testid="new-object">
      <h3>New object</h3>
      {input('name', 'Object name', 'stores')}
      {input('alias', 'Alias', 'store')}
      {input('display_name', 'Object display name', 'Stores')}
      {input('primary', 'Primary key field', 'store_id')}
      <SubmitWithAnswer label="Create object" answer={message} testId="object-message" />
    </form>
  );
}

/** A form's submit button and, once it was used, the server's answer (read out as a status). */
export function SubmitWithAnswer(props: { label: string; answer: string | null; testId: string }) {
  return (
    <>
      <button type="submit">{props.label}</button>
      {props.answer && (
        <p role="status" data-testid={props.testId}>
          {props.answer}
        </p>
      )}
    </>
  );
}
