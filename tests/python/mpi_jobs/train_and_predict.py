"""Run by tests/python/test_mpi.py, alone or under `mpirun -n N`: trains one seeded network on the
same batches either way and writes what the test compares (per-epoch loss, test-row logits and
ids, P@k, a digest of the replicated embedding; with --rerank, the re-ranker's digest and weight)
to OUT.<rank>.json."""

import argparse
import hashlib
import json

import numpy as np
import scipy.sparse as sp

import slide
from slide.distributed.shards import batch_share

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--mode", default="batch")
p.add_argument("--mpi", action="store_true")
p.add_argument("--exchange", default="auto")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--save")
p.add_argument("--load")
p.add_argument("--rerank", type=int, default=0)
p.add_argument("--output-loss", default="softmax")
p.add_argument("--late", action="store_true", help="raise min_active after 1,200 samples (lsh.late_min_active)")
p.add_argument("--validate", action="store_true", help="hold out rows to pick the re-ranker's weight on")
a = p.parse_args()

n, d, labels, B = 600, 300, 97, 8
rng = np.random.default_rng(0)
X = sp.random(n, d, density=0.05, format="csr", random_state=1, dtype=np.float32)
Y = [list(rng.choice(labels, size=rng.integers(1, 4), replace=False)) for _ in range(n)]
Xt = sp.random(90, d, density=0.05, format="csr", random_state=2, dtype=np.float32)
Yt = [list(rng.choice(labels, size=2, replace=False)) for _ in range(90)]
Xv = sp.random(60, d, density=0.05, format="csr", random_state=3, dtype=np.float32)
Yv = [list(rng.choice(labels, size=2, replace=False)) for _ in range(60)]

comm, rank, size = None, 0, 1
if a.mpi:
    from mpi4py import MPI

    comm, rank, size = MPI.COMM_WORLD, MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
if a.load:
    net = slide.Network.load(a.load, comm=comm)
else:
    lsh = None if a.mode == "dense" else slide.MODES["batch"].lsh_config(
        batch_active=20, min_active=40, bucket_size=1000, rehash_every=160,
        **(dict(late_min_active=70, late_after=1200) if a.late else {}))
    net = slide.Network(d, labels, hidden=16, lsh=lsh, threads=1, seed=3, neighbours=0, comm=comm,
                        learning_rate=0.01, sparse_exchange=a.exchange, rerank=a.rerank, output_loss=a.output_loss)
# One process defers the output layer's gradient accumulators; MPI ranks sum into them every batch.
accumulators_at_start = bool(net.weights()["layers.0.weight_grad"].flags.writeable)
# Each rank takes its share of every global batch, in order, so the batches are the single run's.
rows = []
for start in range(0, n, B):
    batch = np.arange(start, min(n, start + B))
    shares = [batch_share(B, size, r) for r in range(size)]
    first = sum(shares[:rank])
    rows.extend(batch[first:first + shares[rank]])
rows = np.array(rows, dtype=np.int64)
losses = []
tuned = None
if a.epochs:
    held = np.arange(rank, Xv.shape[0], size)
    validation = (Xv[held], [Yv[i] for i in held]) if a.validate else None
    h = net.fit(X[rows], [Y[i] for i in rows], epochs=a.epochs, batch_size=B, shuffle=False, progress=False,
                validation_data=validation)
    losses = [e["loss"] for e in h.epochs]
    if a.validate and a.rerank:  # every pair's score again, to compare between ranks
        tuned = {f"{w}/{r}": s for (w, r), s in net.tune_fusion_weights(*validation).items()}
mine = np.arange(rank, Xt.shape[0], size)  # each rank predicts its own test rows
ids, scores = net.predict(Xt[mine], k=5)
report = net.evaluate(Xt[mine], [Yt[i] for i in mine])
embedding = np.ascontiguousarray(net.weights()["input.weight"])
if a.save:
    net.save(a.save)
reranker = None if net.reranker is None else hashlib.sha256(  # what a model file keeps of it
    b"".join(a.tobytes() for a in net.reranker.to_arrays().values())).hexdigest()
try:
    net.remember(X[rows], [Y[i] for i in rows])
    remember = None
except ValueError as e:
    remember = str(e)
json.dump({"loss": losses, "rows": mine.tolist(), "ids": ids.tolist(), "scores": scores.tolist(), "report": report,
           "step": int(net._core.step), "embedding": hashlib.sha256(embedding.tobytes()).hexdigest(),
           "reranker": reranker, "rerank_weight": net.rerank_weight, "tuned": tuned, "remember_refused": remember,
           "accumulators_at_start": accumulators_at_start},
          open(f"{a.out}.{rank}.json", "w"))
