import { Injectable } from '@nestjs/common';

/** The inspector streams open in this process, per session: signing out closes them at once. */
@Injectable()
export class ConsoleStreams {
  private readonly bySession = new Map<string, Set<() => void>>();

  add(sid: string, close: () => void): () => void {
    let set = this.bySession.get(sid);
    if (!set) this.bySession.set(sid, (set = new Set()));
    set.add(close);
    return () => {
      set.delete(close);
      if (set.size === 0) this.bySession.delete(sid);
    };
  }

  closeSession(sid: string): void {
    for (const close of [...(this.bySession.get(sid) ?? [])]) close();
  }
}
