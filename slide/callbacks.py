"""Training callbacks, Keras/Lightning style: an object with any of these methods is called as
`Network.fit` and `Network.partial_fit` train. Subclass `Callback` (every hook is a no-op there)
or pass any object that has the hooks you need."""

from __future__ import annotations

from typing import Any, Iterable, Optional


HOOKS = ("on_train_begin", "on_batch_end", "on_epoch_end", "on_train_end")


class Callback:
    """Hooks into training; override what you need.

    - ``on_train_begin(net)``: before the first batch of a `fit` / `partial_fit` call.
    - ``on_batch_end(net, step, logs)``: after each optimizer step; `step` counts the network's
      steps across calls (and save/load), `logs` holds the batch's ``loss`` (mean over its
      samples), ``samples``, ``active_per_sample`` and ``learning_rate``.
    - ``on_epoch_end(net, epoch, logs)``: after each epoch of `fit` (1-based; `logs` are the
      History's metrics, validation included). Returning ``False`` stops training.
    - ``on_train_end(net, history)``: after the call's last epoch (`history` is None for
      `partial_fit`).
    """

    def on_train_begin(self, net: Any) -> None:
        pass

    def on_batch_end(self, net: Any, step: int, logs: dict[str, Any]) -> None:
        pass

    def on_epoch_end(self, net: Any, epoch: int, logs: dict[str, Any]) -> Optional[bool]:
        return None

    def on_train_end(self, net: Any, history: Any) -> None:
        pass


class CallbackList:
    """Calls each callback's hook, where it has one."""

    def __init__(self, callbacks: Optional[Iterable[Any]]) -> None:
        self.callbacks = list(callbacks or [])
        for c in self.callbacks:
            if not any(callable(getattr(c, hook, None)) for hook in HOOKS):
                raise ValueError(f"callback {c!r} has none of the hooks {', '.join(HOOKS)} (see slide.callbacks)")

    def __bool__(self) -> bool:
        return bool(self.callbacks)

    def call(self, hook: str, *args: Any) -> list[Any]:
        return [getattr(c, hook)(*args) for c in self.callbacks if callable(getattr(c, hook, None))]

    def wants_batches(self) -> bool:
        return any(callable(getattr(c, "on_batch_end", None)) for c in self.callbacks)
