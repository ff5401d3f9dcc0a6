/** A shared one-second tick for elapsed times: one timer for the whole app, not one per row. */
class Clock {
  now = $state(Date.now());
  #users = 0;
  #timer: ReturnType<typeof setInterval> | null = null;

  /** Starts ticking while anyone needs it; returns the function that says it no longer does. */
  use(): () => void {
    if (this.#users++ === 0) this.#timer = setInterval(() => (this.now = Date.now()), 1000);
    return () => {
      if (--this.#users === 0 && this.#timer) {
        clearInterval(this.#timer);
        this.#timer = null;
      }
    };
  }
}

export const clock = new Clock();
