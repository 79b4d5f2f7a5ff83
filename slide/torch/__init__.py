"""slide's LSH-sampled output layer as a PyTorch module (``pip install "slide[torch]"``).

`ExtremeOutput` ends any PyTorch encoder with a very wide softmax output layer that slide's engine
trains sublinearly on CPU threads: ``loss = layer(hidden, labels)`` returns a loss whose backward
gives the encoder dL/dhidden through autograd, while the layer's own weights are stepped by
``layer.optimizer`` (slide's lazy optimizer: only the rows a batch touched move). See
docs/pytorch.md for the update rule, devices and limits. `SparseAdam` is torch.optim.SparseAdam's
update for an encoder's sparse embeddings, made by the engine in one pass over the touched rows.
"""

from .layer import ExtremeOutput
from .optimizer import LayerOptimizer
from .sparse_adam import SparseAdam

__all__ = ["ExtremeOutput", "LayerOptimizer", "SparseAdam"]
