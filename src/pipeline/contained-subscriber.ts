import { Subscriber, type Observer } from 'rxjs';

/**
 * The subscriber a plugin's Observable is subscribed with. A teardown in the plugin's chain that throws (a
 * `finalize` whose clean-up fails, the function a `new Observable` returns) makes rxjs throw an UnsubscriptionError
 * from `unsubscribe()`, which it calls as the answer completes or errors and when the client leaves; nothing in the
 * request's path catches it there, so it reached the process as an uncaught exception (the end of `tollgate serve`,
 * and of every request in flight) after the plugin's request had already been answered. It is handed to `onTeardownError`
 * instead: the subscription is closed either way.
 */
export class ContainedSubscriber<T> extends Subscriber<T> {
  constructor(
    destination: Observer<T>,
    private readonly onTeardownError: (err: unknown) => void,
  ) {
    super(destination);
  }

  override unsubscribe(): void {
    try {
      super.unsubscribe();
    } catch (err) {
      this.onTeardownError(err);
    }
  }
}
