"""`ExtremeOutput`: slide's LSH-sampled softmax output layer as a `torch.nn.Module`."""

from __future__ import annotations

import threading
import warnings
from typing import Any, Optional

import numpy as np
import torch

from .._core import QuantizedCache, output_layer_step, output_layer_top_k
from ..config import LSHConfig
from ..model.checks import check_int
from ..model.errors import TrainingDiverged
from ..settings import NETWORK
from .engine import LayerSettings, build_engine, layer_arrays, layer_settings
from .function import SampledLoss
from .labels import label_arrays
from .optimizer import LayerOptimizer, StagedGradient

STATE_FORMAT = "slide.torch.ExtremeOutput/1"


class ExtremeOutput(torch.nn.Module):
    """A softmax output layer over `n_labels` labels, trained by slide's engine on CPU threads.

    In training mode (``train()`` and gradients enabled), ``layer(hidden, labels)`` scores each row
    of `hidden` against one active set shared by the batch: its labels plus the outputs the LSH
    tables retrieve for its rows (``mode="batch"``), or every output (``mode="dense"``, exact full
    softmax). It returns the mean softmax cross-entropy over the rows that have labels; its
    backward gives the encoder dL/dhidden, and the layer's own weight gradient waits in the engine
    for ``layer.optimizer.step()``. Otherwise (``eval()`` or ``torch.no_grad()``) the loss is the
    exact one over every output, and nothing is staged.

    The layer's tensors live on the CPU in the engine's memory: ``.to("cuda")`` on a model leaves
    them there (`hidden` may come from any device; dL/dhidden goes back to it).

    Args:
        in_features: width of each row of `hidden` (the encoder's output).
        n_labels: outputs of the layer.
        mode: ``"batch"`` (LSH-sampled, the default) or ``"dense"``.
        lsh: LSH settings (a `slide.LSHConfig` for mode "batch"); default: the mode's.
        optimizer: ``"adam"``, ``"adagrad"`` or ``"sgd"``, run by ``layer.optimizer``.
        lr: the optimizer's learning rate (``layer.optimizer.param_groups[0]["lr"]``).
        betas, eps: Adam's moment decays and Adam's/Adagrad's denominator floor.
        precision: ``"fp32"``, or ``"bf16"`` (passes read BF16 copies of the weights).
        matmul: ``"fp32"``, or ``"bf16"``: the layer's three matrix products per batch round their
            inputs to BF16 and sum in fp32 on CPUs with AVX-512 BF16 (`slide.Network`'s
            ``matmul``); elsewhere fp32.
        threads: engine threads (default: every CPU this process may use).
        seed: seeds the weights and hash functions.
    """

    def __init__(self, in_features: int, n_labels: int, *, mode: str = NETWORK["mode"].default,
                 lsh: Optional[LSHConfig] = None, optimizer: str = NETWORK["optimizer"].default,
                 lr: float = NETWORK["learning_rate"].default,
                 betas: tuple[float, float] = (NETWORK["beta1"].default, NETWORK["beta2"].default),
                 eps: float = NETWORK["eps"].default, precision: str = NETWORK["precision"].default,
                 matmul: str = NETWORK["matmul"].default, threads: Optional[int] = None, seed: int = 0) -> None:
        super().__init__()
        NETWORK["learning_rate"].check(lr, "lr")
        self._settings = layer_settings(in_features, n_labels, mode, lsh, optimizer, betas, eps, precision, seed,
                                        matmul)
        self._engine = build_engine(self._settings, threads)
        self._lock = threading.Lock()
        self._staged = StagedGradient()
        self._cache = QuantizedCache()
        self._anchor = torch.zeros((), requires_grad=True)
        for name, array in layer_arrays(self._engine, optimizer).items():
            self.register_buffer(name, torch.from_numpy(array))  # the engine's memory, not a copy
        self.optimizer = LayerOptimizer(self, float(lr))
        self.register_load_state_dict_pre_hook(_before_load)
        self.register_load_state_dict_post_hook(_after_load)
        self._versions = self._tensor_versions()

    in_features = property(lambda self: self._settings.in_features)
    n_labels = property(lambda self: self._settings.n_labels)
    mode = property(lambda self: self._settings.mode)
    threads = property(lambda self: self._engine.threads)

    def extra_repr(self) -> str:
        s = self._settings
        return (f"in_features={s.in_features}, n_labels={s.n_labels}, mode={s.mode!r}, "
                f"optimizer={s.optimizer!r}, lr={self.optimizer.param_groups[0]['lr']}"
                + (", matmul='bf16'" if s.matmul == "bf16" else ""))

    def forward(self, hidden: torch.Tensor, labels: Any) -> torch.Tensor:
        """Mean softmax cross-entropy of the rows of `hidden` that have labels (0 if none).

        labels: a 1-D integer tensor of class ids, a 2-D 0/1 indicator tensor, a sparse tensor,
        or anything `slide.Network.fit` takes as Y; a row's labels share the target equally."""
        h = self._hidden(hidden)
        indptr, indices = label_arrays(labels, self.n_labels, h.shape[0])
        if not (self.training and torch.is_grad_enabled()):
            return torch.tensor(self._exact_loss(h, indptr, indices), dtype=hidden.dtype, device=hidden.device)
        self._refresh_if_written()
        if self._staged.stale():
            self._drop_staged("the previous training forward's loss was never backpropagated; its gradient is "
                              "dropped (compute a loss you do not train on under torch.no_grad() or in eval())")
        return SampledLoss.apply(hidden, self._anchor, self, h, indptr, indices)

    @torch.no_grad()
    def predict(self, hidden: torch.Tensor, k: int = 5, *, scan: str = "auto") -> tuple[torch.Tensor, torch.Tensor]:
        """Exact top-k labels of each row over every output: (ids int64, logits float32), each
        rows x k, best first, on `hidden`'s device. ``scan="int8"`` (or "auto" on wide layers and
        enough rows) finds them with the int8 scan and rescores in fp32."""
        ids, scores, _ = self._top_k(hidden, k, False, scan)
        return ids, scores

    @torch.no_grad()
    def predict_proba(self, hidden: torch.Tensor, k: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k labels with their softmax probabilities over every output: (ids, probabilities)."""
        ids, scores, lse = self._top_k(hidden, k, True, "fp32")
        return ids, torch.exp(scores - lse[:, None])

    def _top_k(self, hidden: torch.Tensor, k: int, normalizer: bool, scan: str) -> tuple[torch.Tensor, ...]:
        check_int("k", k, 1, self.n_labels)
        if scan not in ("auto", "fp32", "int8"):
            raise ValueError(f"scan must be 'auto', 'fp32' or 'int8', got {scan!r}")
        h = self._hidden(hidden)
        ids, scores, lse = self._engine_call(output_layer_top_k, h, k, normalizer, scan, self._cache)
        return tuple(torch.from_numpy(a).to(hidden.device) for a in (ids.astype(np.int64), scores, lse))

    def _hidden(self, hidden: Any) -> np.ndarray:
        """`hidden` checked, as a C-contiguous float32 NumPy array on the CPU."""
        if not isinstance(hidden, torch.Tensor):
            raise ValueError(f"hidden must be a torch.Tensor, got {type(hidden).__name__}")
        if hidden.ndim != 2 or hidden.shape[1] != self.in_features:
            raise ValueError(f"hidden must be (rows, {self.in_features}), got shape {tuple(hidden.shape)}")
        if not hidden.is_floating_point():
            raise ValueError(f"hidden must be a floating-point tensor, got {hidden.dtype}")
        if hidden.device.type == "meta" or hidden.layout != torch.strided:
            raise ValueError(f"hidden must be a dense tensor with data, got one on {hidden.device} ({hidden.layout})")
        h = hidden.detach().to(device="cpu", dtype=torch.float32).contiguous()
        finite = torch.isfinite(h).all(dim=1)
        if not bool(finite.all()):
            raise ValueError(f"hidden row {int((~finite).nonzero()[0])} holds NaN or inf")
        return h.numpy()

    def _exact_loss(self, h: np.ndarray, indptr: np.ndarray, indices: np.ndarray) -> float:
        """Mean over rows with labels of log sum_j exp(z_j) - the mean logit of the row's labels."""
        counts = np.diff(indptr)
        if not counts.any():
            return 0.0
        _, _, lse = self._engine_call(output_layer_top_k, h, 1, True, "fp32", None)
        rows = np.repeat(np.arange(h.shape[0]), counts)
        w = self.weight.numpy()
        logits = np.einsum("ij,ij->i", w[indices].astype(np.float64), h[rows].astype(np.float64))
        logits += self.bias.numpy()[indices]
        label_mean = np.bincount(rows, logits, minlength=h.shape[0])[counts > 0] / counts[counts > 0]
        return float(np.mean(lse[counts > 0] - label_mean))

    def _tensor_versions(self) -> tuple[int, int]:
        return self.weight._version, self.bias._version

    def _refresh_if_written(self) -> None:
        """After an in-place write to `weight` or `bias` through torch (torch.nn.init, copy_,
        load_state_dict), rebuild what derives from them: the LSH tables, and the BF16 copies the
        training passes read. Torch's version counters see those writes; the engine's own steps do
        not move them."""
        versions = self._tensor_versions()
        if versions != self._versions:
            self._engine_call(lambda engine: (engine.sync_low_precision(), engine.rebuild_tables()))
            self._versions = versions

    def _engine_call(self, function: Any, *args: Any) -> Any:
        with self._lock:  # the engine's buffers serve one call at a time
            return function(self._engine, *args)

    def _step(self, lr: float) -> None:
        """LayerOptimizer.step(): one engine step over the staged, backpropagated batches."""
        if self._staged.stale():
            self._drop_staged("layer.optimizer.step() came after a forward whose loss was never backpropagated; "
                              "the staged gradient is dropped and the layer does not step")
            return
        arguments = self._staged.step_arguments()
        self._staged.clear()
        if arguments is None:
            return
        nonfinite = self._engine_call(output_layer_step, lr, *arguments)
        if nonfinite:
            raise TrainingDiverged(f"ExtremeOutput: {nonfinite} weight rows hold NaN or inf after the step "
                                   f"(learning rate {lr}); lower it, and reload a saved state_dict")

    def _zero_grad(self) -> None:
        """LayerOptimizer.zero_grad(): drop what backward passes staged. A batch whose forward ran
        and whose backward has not yet (zero_grad between the two, a common loop order) is kept:
        in torch its gradient does not exist yet either."""
        if self._staged.batches and all(factor is None for _, factor in self._staged.batches):
            return
        self._drop_staged()

    def _drop_staged(self, why: Optional[str] = None) -> None:
        if why:
            warnings.warn(f"ExtremeOutput: {why}", RuntimeWarning, stacklevel=3)
        if self._staged.batches:
            self._engine_call(lambda engine: engine.clear_gradients())
            self._staged.clear()

    def _apply(self, fn: Any, recurse: bool = True) -> "ExtremeOutput":
        return self  # .to()/.cuda()/.half() leave the layer's tensors, which are the engine's memory, as they are

    def get_extra_state(self) -> dict[str, Any]:
        counters = self._engine.counters()
        return {"format": STATE_FORMAT, "settings": self._settings.as_dict(), "step": int(counters["step"]),
                "samples_seen": int(counters["samples_seen"])}

    def set_extra_state(self, state: Any) -> None:
        counters = self._engine.counters()
        counters["step"], counters["samples_seen"] = self._checked_extra_state(state)
        self._engine_call(lambda engine: engine.set_counters(counters))

    def _checked_extra_state(self, state: Any) -> tuple[int, int]:
        """(step, samples_seen) of a state's extra state, or ValueError saying what is wrong."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"not an ExtremeOutput state (expected format {STATE_FORMAT!r})")
        saved = state.get("settings")
        if isinstance(saved, dict) and "matmul" not in saved:  # saved before the setting existed: fp32
            saved = {**saved, "matmul": NETWORK["matmul"].default}
        mine = self._settings.as_dict()
        if not isinstance(saved, dict) or set(saved) != set(mine):
            raise ValueError("ExtremeOutput state: its settings are missing or malformed")
        differ = [f"{k}: saved {saved[k]!r}, this layer {mine[k]!r}" for k in mine if saved[k] != mine[k]]
        if differ:
            raise ValueError("ExtremeOutput state is from a different layer: " + "; ".join(differ))
        counts = state.get("step"), state.get("samples_seen")
        for key, value in zip(("step", "samples_seen"), counts):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62:
                raise ValueError(f"ExtremeOutput state: {key} must be an integer in [0, 2**62), got {value!r}")
        return counts

    def __reduce__(self) -> tuple[Any, ...]:
        state = {k: v.clone() for k, v in self.state_dict().items() if isinstance(v, torch.Tensor)}
        state["_extra_state"] = self.get_extra_state()
        return (_rebuilt, (self._settings.as_dict(), self.threads, self.optimizer.param_groups[0]["lr"],
                           state, self.training))


def _before_load(layer: ExtremeOutput, state: dict, prefix: str, *args: Any) -> None:
    """Before load_state_dict copies anything: refuse non-finite tensors and a foreign extra state,
    so a refused state leaves the layer as it was."""
    for name, _ in layer.named_buffers(recurse=False):
        tensor = state.get(prefix + name)
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"ExtremeOutput state: {name} holds NaN or inf")
    if prefix + "_extra_state" in state:
        layer._checked_extra_state(state[prefix + "_extra_state"])


def _after_load(layer: ExtremeOutput, incompatible: Any) -> None:
    """After load_state_dict: drop staged gradients, refresh what derives from the weights."""
    layer._drop_staged()
    layer._refresh_if_written()


def _rebuilt(settings: dict[str, Any], threads: int, lr: float, state: dict[str, Any],
             training: bool) -> ExtremeOutput:
    s = LayerSettings(**settings)
    lsh = s.lsh_config()
    layer = ExtremeOutput(s.in_features, s.n_labels, mode=s.mode, lsh=lsh, optimizer=s.optimizer, lr=lr,
                          betas=(s.beta1, s.beta2), eps=s.eps, precision=s.precision, matmul=s.matmul,
                          threads=threads, seed=s.seed)
    layer.load_state_dict(state)
    return layer.train(training)
