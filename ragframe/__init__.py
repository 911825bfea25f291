"""ragframe: evaluate RAG systems as tables.

Samples are rows of a polars/Arrow/pandas frame; every metric is a columnar
kernel over the whole batch.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> df = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
>>> df.pipe(rf.score_retrieval, k=1, metrics=["mrr"])["mrr"].to_list()
[0.5]
"""

from ragframe.budgeting import budget_summary
from ragframe.exceptions import (
    InputFileError,
    InvalidParameterError,
    MissingDependencyError,
    RagframeError,
    SchemaError,
    SkippedMetricWarning,
)
from ragframe.io.scores import read_scores
from ragframe.io.streaming import ParquetEvaluation, ResumeError, RunFailedError, evaluate_parquet
from ragframe.io.traces import read_traces
from ragframe.io.trec import read_qrels, read_trec_run, write_qrels, write_trec_run
from ragframe.judges import OpenAIJudge, judge_usage
from ragframe.metrics import Metric, list_metrics, register_metric, score_columns, unregister_metric
from ragframe.metrics.callback import callback_metric
from ragframe.metrics.judge import judge_metric
from ragframe.metrics.retrieval import evaluate_run, retrieval_metrics, run_summary
from ragframe.namespace import register as _register_namespace
from ragframe.retrieve import retrieve
from ragframe.run import Evaluator, aevaluate, evaluate, routing_summary
from ragframe.run.functions import (
    judge_answer_correctness,
    judge_answer_relevance,
    judge_context_precision,
    judge_context_recall,
    judge_context_relevance,
    judge_faithfulness,
    score_answer_correctness,
    score_answer_relevance,
    score_context_precision,
    score_context_recall,
    score_context_relevance,
    score_faithfulness,
    score_hallucination_rate,
    score_retrieval,
)
from ragframe.stats.agreement import agreement, cohen_kappa, judgment_summary, judgments_to_qrels
from ragframe.stats.batch_summary import batch_passed, detect_regressions, summarize_batch
from ragframe.stats.calibrate import Calibrator, calibrate
from ragframe.stats.compare import adjust_p_values, compare, compare_runs
from ragframe.stats.estimate import estimate
from ragframe.stats.gate import gate
from ragframe.stats.regressions import regressions
from ragframe.stats.sample_size import sample_size
from ragframe.stats.summary import SummaryState, merge_summary_states, summarize, summary_state
from ragframe.stats.validity import agreement_with_labels

_register_namespace()  # df.rf.evaluate(...), df.rf.summarize(), ...

__version__ = "0.1.0"

__all__ = [
    "Calibrator",
    "Evaluator",
    "InputFileError",
    "InvalidParameterError",
    "Metric",
    "MissingDependencyError",
    "OpenAIJudge",
    "ParquetEvaluation",
    "RagframeError",
    "ResumeError",
    "RunFailedError",
    "SchemaError",
    "SkippedMetricWarning",
    "SummaryState",
    "__version__",
    "adjust_p_values",
    "aevaluate",
    "agreement",
    "agreement_with_labels",
    "batch_passed",
    "budget_summary",
    "calibrate",
    "callback_metric",
    "cohen_kappa",
    "compare",
    "compare_runs",
    "detect_regressions",
    "estimate",
    "evaluate",
    "evaluate_parquet",
    "evaluate_run",
    "gate",
    "judge_answer_correctness",
    "judge_answer_relevance",
    "judge_context_precision",
    "judge_context_recall",
    "judge_context_relevance",
    "judge_faithfulness",
    "judge_metric",
    "judge_usage",
    "judgment_summary",
    "judgments_to_qrels",
    "list_metrics",
    "merge_summary_states",
    "read_qrels",
    "read_scores",
    "read_traces",
    "read_trec_run",
    "register_metric",
    "regressions",
    "retrieval_metrics",
    "retrieve",
    "routing_summary",
    "run_summary",
    "sample_size",
    "score_answer_correctness",
    "score_answer_relevance",
    "score_columns",
    "score_context_precision",
    "score_context_recall",
    "score_context_relevance",
    "score_faithfulness",
    "score_hallucination_rate",
    "score_retrieval",
    "summarize",
    "summarize_batch",
    "summary_state",
    "unregister_metric",
    "write_qrels",
    "write_trec_run",
]

# submodules and functions that need an optional extra: imported on first use, so that
# ``import ragframe`` never imports matplotlib, jinja2 or ray
# (the report function lives in ragframe.reporting: a submodule named "report" would replace it on import)
_LAZY = {
    "plot": ("ragframe.plot", None),
    "report": ("ragframe.reporting", "report"),
    "distributed": ("ragframe.distributed", None),
}


#: The metric-name tuples of earlier releases: ``rf.list_metrics()`` says the same, and more.
_DEPRECATED_TUPLES = {"HEURISTIC_METRICS": "heuristic", "RETRIEVAL_METRICS": "retrieval", "JUDGE_METRICS": "judge"}


def __getattr__(name: str) -> object:  # PEP 562
    if name in _DEPRECATED_TUPLES:
        import warnings

        family = _DEPRECATED_TUPLES[name]
        warnings.warn(
            f"rf.{name} is deprecated; use rf.list_metrics().filter(pl.col('family') == {family!r})['name']",
            DeprecationWarning,
            stacklevel=2,
        )
        from ragframe.metrics import registry

        return tuple(m.name for m in registry.metrics(family) if registry.is_built_in(m.name))
    if name not in _LAZY:
        raise AttributeError(f"module 'ragframe' has no attribute {name!r}")
    import importlib

    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value
