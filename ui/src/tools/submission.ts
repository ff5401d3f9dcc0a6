/**
 * One idempotency key per submission of a run form. The key is made when the form opens and kept
 * until a run has started with it, so a second submit while the first is on its way (a double
 * click, Enter pressed twice) and a retry after an error both name the same submission, and the
 * engine starts one task for it (`Engine::run_once`). Only a started run makes a new key: the
 * next submission of the same form is a new run.
 */
export class Submission<T> {
  #key: string;
  #inFlight: Promise<T> | null = null;
  readonly #make: () => string;

  constructor(make: () => string = newKey) {
    this.#make = make;
    this.#key = make();
  }

  get key(): string {
    return this.#key;
  }

  /** Runs `start` with this submission's key; a submit while one is in flight gets that one's outcome. */
  submit(start: (key: string) => Promise<T>): Promise<T> {
    if (this.#inFlight) return this.#inFlight;
    const attempt = start(this.#key).then((started) => {
      this.#key = this.#make();
      return started;
    });
    this.#inFlight = attempt;
    const clear = () => {
      if (this.#inFlight === attempt) this.#inFlight = null;
    };
    attempt.then(clear, clear);
    return attempt;
  }
}

/** A random key; `crypto.randomUUID` where the webview has it, the same 122 random bits otherwise. */
export function newKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
