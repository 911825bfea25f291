"""LangSmith run exports into the span frame: JSON (a list of runs) or JSON lines (one run a line).

A run is a span: ``id`` (span id), ``trace_id``, ``parent_run_id``, ``run_type``
(``chain``, ``retriever``, ``llm``, ``tool``, ...), ``name``, ``inputs``, ``outputs``,
``start_time``/``end_time`` (ISO 8601, UTC), ``tags``, ``extra.metadata`` and the token
counts ``prompt_tokens``/``completion_tokens``/``total_tokens``. What each kind of run
gives:

- a chain's ``inputs``/``outputs``: the value of its one key, or of ``question``/``input``/
  ``query`` and ``answer``/``output``/``result``/``text``; else the whole object as JSON;
- a retriever's ``outputs.documents``: LangChain documents in rank order, ``page_content``
  the content, the document's ``id`` (else ``metadata.id``) the id, ``metadata.score``
  (else ``metadata.relevance_score``) the score;
- an llm's ``inputs.messages`` (the last human/user message) or ``inputs.prompts`` (the
  last prompt), ``outputs.generations`` (the last generation's text or message content),
  the model from ``extra.metadata.ls_model_name`` or ``extra.invocation_params``.

Run exports are nested JSON objects whose shape differs by run type, so each run is read
with the standard ``json`` module (one dict per run; the columns are then built once).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import InputFileError
from ragframe.io.traces.spans import INPUT_KEYS, OUTPUT_KEYS, SPAN_SCHEMA, conform

__all__ = ["read_langsmith", "KINDS"]

#: run_type -> OpenInference span kind.
KINDS = {
    "chain": "CHAIN",
    "retriever": "RETRIEVER",
    "llm": "LLM",
    "chat_model": "LLM",
    "tool": "TOOL",
    "embedding": "EMBEDDING",
    "prompt": "CHAIN",
    "parser": "CHAIN",
}
_INPUT_KEYS = INPUT_KEYS
_OUTPUT_KEYS = OUTPUT_KEYS


def _text(value: Any, keys: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if len(value) == 1:
            only = next(iter(value.values()))
            return only if isinstance(only, str) else json.dumps(only)
        for key in keys:
            if isinstance(value.get(key), str):
                return value[key]
    return json.dumps(value)


def _message(message: Any) -> tuple[str | None, str | None]:
    """(role, content) of a message in any of LangChain's serialized forms."""
    if isinstance(message, str):
        return "user", message
    if not isinstance(message, dict):
        return None, None
    if "kwargs" in message:  # {"lc": 1, "type": "constructor", "id": [..., "HumanMessage"], "kwargs": {...}}
        kind = str((message.get("id") or [""])[-1])
        role = "user" if kind.startswith("Human") else "assistant" if kind.startswith("AI") else kind
        return role, message["kwargs"].get("content")
    role = message.get("role") or message.get("type")
    role = {"human": "user", "ai": "assistant"}.get(role, role)
    return role, message.get("content")


def _user_message(inputs: Any) -> str | None:
    if not isinstance(inputs, dict):
        return None
    messages = inputs.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[0], list):
        messages = messages[-1]
    if isinstance(messages, list):
        users = [content for role, content in map(_message, messages) if role == "user"]
        if users and isinstance(users[-1], str):
            return users[-1]
    prompts = inputs.get("prompts")
    if isinstance(prompts, list) and prompts and isinstance(prompts[-1], str):
        return prompts[-1]
    return None


def _llm_output(outputs: Any) -> str | None:
    if not isinstance(outputs, dict):
        return None
    generations = outputs.get("generations")
    while isinstance(generations, list) and generations and isinstance(generations[-1], list):
        generations = generations[-1]
    if isinstance(generations, list) and generations and isinstance(generations[-1], dict):
        last = generations[-1]
        if isinstance(last.get("text"), str) and last["text"]:
            return last["text"]
        _, content = _message(last.get("message"))
        return content if isinstance(content, str) else None
    return _text(outputs, _OUTPUT_KEYS)


def _documents(outputs: Any) -> list[dict[str, Any]] | None:
    if not isinstance(outputs, dict) or not isinstance(outputs.get("documents"), list):
        return None
    found = []
    for doc in outputs["documents"]:
        doc = doc.get("kwargs", doc) if isinstance(doc, dict) else {}
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        ident = doc.get("id") if doc.get("id") is not None else meta.get("id")
        score = meta.get("score", meta.get("relevance_score"))
        found.append(
            {
                "content": doc.get("page_content"),
                "id": None if ident is None else str(ident),
                "score": float(score) if isinstance(score, (int, float)) else None,
            }
        )
    return found


def _tokens(run: dict[str, Any], key: str) -> int | None:
    value = run.get(key)
    if isinstance(value, int) and value:
        return value
    usage = ((run.get("outputs") or {}).get("llm_output") or {}).get("token_usage") or {}
    value = usage.get(key)
    return value if isinstance(value, int) else None


def _span(run: dict[str, Any], row: int) -> dict[str, Any]:
    kind = KINDS.get(str(run.get("run_type")), str(run.get("run_type") or "").upper() or None)
    extra = run.get("extra") if isinstance(run.get("extra"), dict) else {}
    metadata = extra.get("metadata") if isinstance(extra.get("metadata"), dict) else None
    params = extra.get("invocation_params") if isinstance(extra.get("invocation_params"), dict) else {}
    model = (metadata or {}).get("ls_model_name") or params.get("model") or params.get("model_name")
    session = next(
        (metadata[k] for k in ("session_id", "thread_id", "conversation_id") if (metadata or {}).get(k)), None
    )
    inputs, outputs = run.get("inputs"), run.get("outputs")
    return {
        "trace_id": None if run.get("trace_id") is None else str(run["trace_id"]),
        "span_id": None if run.get("id") is None else str(run["id"]),
        "parent_id": None if run.get("parent_run_id") is None else str(run["parent_run_id"]),
        "name": run.get("name"),
        "kind": kind,
        "start": run.get("start_time"),
        "end": run.get("end_time"),
        "input": _text(inputs, _INPUT_KEYS),
        "output": _text(outputs, _OUTPUT_KEYS),
        "user_message": _user_message(inputs) if kind == "LLM" else None,
        "llm_output": _llm_output(outputs) if kind == "LLM" else None,
        "model": None if model is None else str(model),
        "prompt_tokens": _tokens(run, "prompt_tokens"),
        "completion_tokens": _tokens(run, "completion_tokens"),
        "total_tokens": _tokens(run, "total_tokens"),
        "session_id": None if session is None else str(session),
        "metadata": None if metadata is None else json.dumps(metadata),
        "tags": run.get("tags") if isinstance(run.get("tags"), list) else None,
        "documents": _documents(outputs) if kind == "RETRIEVER" else None,
        "source_row": row,
    }


def _runs(path: Path) -> list[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"cannot read {str(path)!r}: {exc}") from exc
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            return list(enumerate(json.loads(text)))
        except ValueError as exc:
            raise InputFileError(f"{str(path)!r} is not JSON: {exc}") from exc
    runs = []
    for number, line in enumerate(text.splitlines()):
        if line.strip():
            try:
                runs.append((number, json.loads(line)))
            except ValueError as exc:
                raise InputFileError(f"{str(path)!r} line {number + 1}: not JSON ({exc})") from exc
    return runs


def read_langsmith(path: Path) -> pl.DataFrame:
    """The span frame of a LangSmith run export (a JSON list of runs, or JSON lines).

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> _ = path.write_text(json.dumps({"id": "r1", "trace_id": "r1", "run_type": "chain",
    ...     "inputs": {"question": "q?"}, "outputs": {"answer": "a."}}) + "\\n")
    >>> read_langsmith(path).select("trace_id", "kind", "input", "output").row(0)
    ('r1', 'CHAIN', 'q?', 'a.')
    """
    spans = []
    for row, run in _runs(path):
        if not isinstance(run, dict) or "run_type" not in run or "id" not in run:
            raise InputFileError(f"{str(path)!r} line {row + 1}: not a LangSmith run (an object with id and run_type)")
        spans.append(_span(run, row))
    schema = (
        {**{k: SPAN_SCHEMA[k] for k in SPAN_SCHEMA if k in spans[0]}, "start": pl.String, "end": pl.String}
        if spans
        else {}
    )
    frame = pl.DataFrame(spans, schema=schema or None)
    if frame.height == 0:
        return conform(frame)
    times = {
        name: pl.col(name).str.to_datetime(time_zone="UTC", time_unit="ns", strict=False).dt.epoch("ns")
        for name in ("start", "end")
    }
    frame = frame.with_columns(
        times["start"].alias("start_ns"), times["end"].alias("end_ns"), pl.lit(str(path)).alias("source_file")
    )
    return conform(frame)
