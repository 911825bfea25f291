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

from contextlib import suppress as _suppress

import polars as _pl

from ragframe.exceptions import (
    InputFileError,
    InvalidParameterError,
    MissingDependencyError,
    RagframeError,
    SchemaError,
    SkippedMetricWarning,
)
from ragframe.retrieve import retrieve  # before any import of the submodule could shadow the function

#: Public name -> the module that defines it, imported on first use (PEP 562): ``import ragframe`` (and
#: ``ragframe trec``) imports only what is used. ``from ragframe.x import name`` lines added here work too.
_EXPORTS: dict[str, str] = {
    "budget_summary": "ragframe.budgeting",
    "read_scores": "ragframe.io.scores",
    "ParquetEvaluation": "ragframe.io.outcome",
    "ResumeError": "ragframe.exceptions",
    "RunFailedError": "ragframe.exceptions",
    "evaluate_parquet": "ragframe.io.streaming",
    "read_qrels": "ragframe.io.trec",
    "read_trec_run": "ragframe.io.trec",
    "write_qrels": "ragframe.io.trec",
    "write_trec_run": "ragframe.io.trec",
    "OpenAIJudge": "ragframe.judges",
    "judge_usage": "ragframe.judges",
    "Metric": "ragframe.metrics",
    "list_metrics": "ragframe.metrics",
    "register_metric": "ragframe.metrics",
    "score_columns": "ragframe.metrics",
    "unregister_metric": "ragframe.metrics",
    "callback_metric": "ragframe.metrics.callback",
    "judge_metric": "ragframe.metrics.judge",
    "evaluate_run": "ragframe.run.trec_run",
    "retrieval_metrics": "ragframe.run.trec_run",
    "run_summary": "ragframe.run.trec_run",
    "Evaluator": "ragframe.run",
    "aevaluate": "ragframe.run",
    "evaluate": "ragframe.run",
    "routing_summary": "ragframe.run",
    "judge_answer_correctness": "ragframe.run.functions",
    "judge_answer_relevance": "ragframe.run.functions",
    "judge_context_precision": "ragframe.run.functions",
    "judge_context_recall": "ragframe.run.functions",
    "judge_context_relevance": "ragframe.run.functions",
    "judge_faithfulness": "ragframe.run.functions",
    "score_answer_correctness": "ragframe.run.functions",
    "score_answer_relevance": "ragframe.run.functions",
    "score_context_precision": "ragframe.run.functions",
    "score_context_recall": "ragframe.run.functions",
    "score_context_relevance": "ragframe.run.functions",
    "score_faithfulness": "ragframe.run.functions",
    "score_hallucination_rate": "ragframe.run.functions",
    "score_retrieval": "ragframe.run.functions",
    "agreement": "ragframe.stats.agreement",
    "cohen_kappa": "ragframe.stats.agreement",
    "judgment_summary": "ragframe.stats.agreement",
    "judgments_to_qrels": "ragframe.stats.agreement",
    "batch_passed": "ragframe.stats.batch_summary",
    "detect_regressions": "ragframe.stats.batch_summary",
    "summarize_batch": "ragframe.stats.batch_summary",
    "Calibrator": "ragframe.stats.calibrate",
    "calibrate": "ragframe.stats.calibrate",
    "adjust_p_values": "ragframe.stats.compare",
    "compare": "ragframe.stats.compare",
    "compare_runs": "ragframe.stats.compare",
    "estimate": "ragframe.stats.estimate",
    "gate": "ragframe.stats.gate",
    "regressions": "ragframe.stats.regressions",
    "sample_size": "ragframe.stats.sample_size",
    "SummaryState": "ragframe.stats.summary",
    "merge_summary_states": "ragframe.stats.summary",
    "summarize": "ragframe.stats.summary",
    "summary_state": "ragframe.stats.summary",
    "agreement_with_labels": "ragframe.stats.validity",
    "generate_testset": "ragframe.testsets",
    "read_traces": "ragframe.io.traces",
    "judge_relevance": "ragframe.metrics.relevance",
    "assessor_agreement": "ragframe.stats.assessors",
    "estimate_systems": "ragframe.stats.estimate_systems",
    "fill_holes": "ragframe.stats.holes",
    "judged_at_k": "ragframe.stats.holes",
    "preference_agreement": "ragframe.stats.preference",
    "ranking_agreement": "ragframe.stats.ranking_agreement",
    "check_claims": "ragframe.metrics.claim_checking",
    "create_nuggets": "ragframe.metrics.nugget_creation",
    "judge_nugget_assignment": "ragframe.run.functions",
    "to_annotations": "ragframe.io.annotations",
    "read_dataset": "ragframe.io.datasets",
    "write_dataset": "ragframe.io.datasets",
    "generated_qrels": "ragframe.testsets",
    "generation_rejections": "ragframe.testsets",
}


class _LazyNamespace:
    """``df.rf`` until first used: then :func:`ragframe.namespace.register` puts the real namespace in its place."""

    def __get__(self, instance: object, owner: type) -> object:
        for frame_class in (_pl.DataFrame, _pl.LazyFrame):
            if isinstance(vars(frame_class).get("rf"), _LazyNamespace):
                with _suppress(AttributeError):  # another thread may have removed it first
                    delattr(frame_class, "rf")
        from ragframe.namespace import register

        register()
        return (owner if instance is None else instance).rf


for _frame_class in (_pl.DataFrame, _pl.LazyFrame):  # df.rf.evaluate(...), df.rf.summarize(), ...
    if not hasattr(_frame_class, "rf"):
        _frame_class.rf = _LazyNamespace()

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
    "assessor_agreement",
    "batch_passed",
    "budget_summary",
    "calibrate",
    "callback_metric",
    "check_claims",
    "cohen_kappa",
    "compare",
    "compare_runs",
    "create_nuggets",
    "detect_regressions",
    "estimate",
    "estimate_systems",
    "evaluate",
    "evaluate_parquet",
    "evaluate_run",
    "fill_holes",
    "gate",
    "generate_testset",
    "generated_qrels",
    "generation_rejections",
    "judge_answer_correctness",
    "judge_answer_relevance",
    "judge_context_precision",
    "judge_context_recall",
    "judge_context_relevance",
    "judge_faithfulness",
    "judge_metric",
    "judge_nugget_assignment",
    "judge_relevance",
    "judge_usage",
    "judged_at_k",
    "judgment_summary",
    "judgments_to_qrels",
    "list_metrics",
    "merge_summary_states",
    "preference_agreement",
    "ranking_agreement",
    "read_dataset",
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
    "to_annotations",
    "unregister_metric",
    "write_dataset",
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
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
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
        import importlib.util

        if importlib.util.find_spec(f"ragframe.{name}") is not None:  # a submodule: rf.stats, rf.metrics, ...
            return importlib.import_module(f"ragframe.{name}")
        raise AttributeError(f"module 'ragframe' has no attribute {name!r}")
    import importlib

    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
