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
from ragframe.evaluator import Evaluator, aevaluate, evaluate
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
from ragframe.io.trec import read_qrels, read_trec_run, write_qrels, write_trec_run
from ragframe.judges import OpenAIJudge, judge_usage
from ragframe.metrics import Metric, list_metrics, register_metric, score_columns, unregister_metric
from ragframe.metrics.callback import callback_metric
from ragframe.metrics.heuristic import (
    HEURISTIC_METRICS,
    score_answer_correctness,
    score_answer_relevance,
    score_context_precision,
    score_context_recall,
    score_context_relevance,
    score_faithfulness,
    score_hallucination_rate,
)
from ragframe.metrics.judge import (
    JUDGE_METRICS,
    judge_answer_correctness,
    judge_answer_relevance,
    judge_context_precision,
    judge_context_recall,
    judge_context_relevance,
    judge_faithfulness,
    judge_metric,
)
from ragframe.metrics.retrieval import (
    RETRIEVAL_METRICS,
    evaluate_run,
    retrieval_metrics,
    run_summary,
    score_retrieval,
)
from ragframe.namespace import register as _register_namespace
from ragframe.retrieve import retrieve
from ragframe.routing import routing_summary
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
    "Evaluator",
    "HEURISTIC_METRICS",
    "RETRIEVAL_METRICS",
    "InvalidParameterError",
    "Metric",
    "list_metrics",
    "register_metric",
    "unregister_metric",
    "score_columns",
    "MissingDependencyError",
    "RagframeError",
    "SchemaError",
    "SkippedMetricWarning",
    "batch_passed",
    "detect_regressions",
    "evaluate",
    "evaluate_run",
    "read_qrels",
    "read_trec_run",
    "retrieval_metrics",
    "run_summary",
    "score_answer_correctness",
    "score_answer_relevance",
    "score_context_precision",
    "score_context_recall",
    "score_context_relevance",
    "score_faithfulness",
    "score_hallucination_rate",
    "score_retrieval",
    "summarize_batch",
    "write_qrels",
    "write_trec_run",
    "SummaryState",
    "adjust_p_values",
    "compare",
    "compare_runs",
    "merge_summary_states",
    "regressions",
    "gate",
    "read_scores",
    "summarize",
    "summary_state",
    "agreement",
    "cohen_kappa",
    "judgment_summary",
    "judgments_to_qrels",
    "agreement_with_labels",
    "evaluate_parquet",
    "budget_summary",
    "ParquetEvaluation",
    "ResumeError",
    "RunFailedError",
    "InputFileError",
    "OpenAIJudge",
    "judge_usage",
    "JUDGE_METRICS",
    "judge_faithfulness",
    "judge_answer_relevance",
    "judge_context_relevance",
    "judge_context_precision",
    "judge_context_recall",
    "judge_answer_correctness",
    "routing_summary",
    "callback_metric",
    "judge_metric",
    "retrieve",
    "aevaluate",
    "estimate",
    "calibrate",
    "Calibrator",
    "sample_size",
    "__version__",
]

# submodules and functions that need an optional extra: imported on first use, so that
# ``import ragframe`` never imports matplotlib, jinja2 or ray
# (the report function lives in ragframe.reporting: a submodule named "report" would replace it on import)
_LAZY = {
    "plot": ("ragframe.plot", None),
    "report": ("ragframe.reporting", "report"),
    "distributed": ("ragframe.distributed", None),
}


def __getattr__(name: str) -> object:  # PEP 562
    if name not in _LAZY:
        raise AttributeError(f"module 'ragframe' has no attribute {name!r}")
    import importlib

    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value
