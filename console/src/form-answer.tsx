import { CallError } from './api.js';

/** What a form shows after its call: the server's message and, where it refused the body, each invalid field. */
export interface FormAnswer {
  ok: boolean;
  text: string;
  invalids: string[];
}

/** A refused call as a form's answer: its message, and its invalids as `field: reason`. */
export function refusal(err: unknown): FormAnswer {
  const invalids = err instanceof CallError ? err.invalids.map((i) => `${String(i.field)}: ${i.reason}`) : [];
  return { ok: false, text: (err as Error).message, invalids };
}

export function FormAnswerView(props: { answer: FormAnswer; testId: string; role: 'status' | 'alert' }) {
  const { answer } = props;
  return (
    <div class={answer.ok ? 'ok' : 'error'} role={props.role} data-testid={props.testId}>
      {answer.text}
      {answer.invalids.length ? (
        <ul>
          {answer.invalids.map((i) => (
            <li key={i}>{i}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
