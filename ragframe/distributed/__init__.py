"""ragframe on a Ray cluster: the local kernels and statistics over Ray Datasets.

- :func:`score_dataset`: score a ``ray.data.Dataset`` with the local kernels
  (``map_batches`` with :class:`BatchScorer`); scores equal local scores bit for bit.
- :func:`summarize_dataset`: :func:`ragframe.summarize` from mergeable states, one per block.
- :func:`compare_datasets`: :func:`ragframe.compare` with the pairs made on the cluster.
- ``ragframe eval ... --engine ray``: :func:`evaluate_parquet_ray`, which for local files is
  :func:`ragframe.evaluate_parquet` with its batches run as Ray tasks (:class:`RayRunner`).

Ray is an optional extra (``pip install 'ragframe[ray]'``), imported only when one of these
runs; without it they raise :class:`~ragframe.exceptions.MissingDependencyError`. See
docs/distributed.md.
"""

from ragframe.distributed.compare import CollectLimitError, compare_datasets
from ragframe.distributed.parquet import evaluate_parquet_ray
from ragframe.distributed.runner import RayRunner
from ragframe.distributed.scoring import BatchScorer, score_dataset
from ragframe.distributed.summary import summarize_dataset

__all__ = [
    "score_dataset",
    "summarize_dataset",
    "compare_datasets",
    "evaluate_parquet_ray",
    "RayRunner",
    "BatchScorer",
    "CollectLimitError",
]
