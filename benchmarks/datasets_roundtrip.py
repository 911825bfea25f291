"""Round trips with the real ragas and deepeval: their files read by ragframe, ragframe's files loaded by them.

ragas and deepeval are heavy and not ragframe dependencies: install them in a scratch virtual environment
and point this script at its Python (the script itself runs with ragframe's environment):

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install ragas deepeval
    PYTHONPATH=$PWD python benchmarks/datasets_roundtrip.py --peers-python /tmp/peers/bin/python

1. The peers' Python writes hand-made samples with ``EvaluationDataset.to_jsonl`` / ``to_csv`` (ragas) and
   ``EvaluationDataset.save_as("json")`` (deepeval, goldens and test cases); ``rf.read_dataset`` must give
   back exactly those samples.
2. ragframe writes the bundled ARES log (200 rows, plus a reference answer and ids) with
   ``rf.write_dataset`` as ragas JSONL and CSV and as a deepeval JSON file; the peers' Python loads them
   (``EvaluationDataset.from_jsonl``; ragas 0.4 has no CSV reader, so the CSV goes through ``csv`` and
   ``EvaluationDataset.from_list`` after reading each list cell as JSON; deepeval's
   ``add_goldens_from_json_file`` and ``add_test_cases_from_json_file``) and prints what it loaded, which
   must equal the frame.

Prints one line per check and the package versions; exit status 0 when every check holds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

import ragframe as rf
from ragframe.datasets import example_rag_log

SAMPLES = [
    {
        "question": "Where is the Eiffel Tower?",
        "contexts": ["The Eiffel Tower is in Paris.", 'It\'s "big", 330 m.'],
        "answer": "It is in Paris.",
        "ground_truth": "Paris, France.",
        "reference_contexts": ["In Paris."],
        "retrieved_ids": ["d1", "d7"],
        "relevant_ids": ["d1"],
    },
    {
        "question": "Wie hoch ist der Turm?\nZeile zwei",
        "contexts": ["Er ist 330 m hoch; früher 300 m."],
        "answer": "330 Meter.",
        "ground_truth": None,
        "reference_contexts": None,
        "retrieved_ids": None,
        "relevant_ids": None,
    },
]

WRITE = r"""
import json, sys
from ragas import EvaluationDataset
from ragas.dataset_schema import SingleTurnSample
from deepeval.dataset import EvaluationDataset as DE, Golden
from deepeval.test_case import LLMTestCase
out, samples = sys.argv[1], json.loads(sys.argv[2])
names = {"question": "user_input", "contexts": "retrieved_contexts", "answer": "response", "ground_truth": "reference",
         "reference_contexts": "reference_contexts", "retrieved_ids": "retrieved_context_ids",
         "relevant_ids": "reference_context_ids"}
ds = EvaluationDataset(samples=[SingleTurnSample(**{names[k]: v for k, v in s.items()}) for s in samples])
ds.to_jsonl(out + "/ragas.jsonl"); ds.to_csv(out + "/ragas.csv")
goldens = [Golden(input=s["question"], actual_output=s["answer"], expected_output=s["ground_truth"],
                  retrieval_context=s["contexts"], context=s["reference_contexts"]) for s in samples]
DE(goldens=goldens).save_as(file_type="json", directory=out, file_name="goldens")
d = DE()
for s in samples:
    d.add_test_case(LLMTestCase(input=s["question"], actual_output=s["answer"], expected_output=s["ground_truth"],
                                retrieval_context=s["contexts"], context=s["reference_contexts"]))
d.save_as(file_type="json", directory=out, file_name="test_cases", include_test_cases=True)
import ragas, deepeval
print(json.dumps({"ragas": ragas.__version__, "deepeval": deepeval.__version__}))
"""

LOAD = r"""
import csv, json, sys
from ragas import EvaluationDataset
from deepeval.dataset import EvaluationDataset as DE
out = sys.argv[1]
loaded = {}
ds = EvaluationDataset.from_jsonl(out + "/mine.jsonl")
loaded["ragas_jsonl"] = [[s.user_input, s.retrieved_contexts, s.response, s.reference, s.retrieved_context_ids]
                         for s in ds.samples]
with open(out + "/mine.csv", newline="", encoding="utf-8") as f:
    lists = {"retrieved_contexts", "reference_contexts", "retrieved_context_ids", "reference_context_ids"}
    rows = [{k: (json.loads(v) if k in lists else v) for k, v in r.items() if v != ""} for r in csv.DictReader(f)]
ds = EvaluationDataset.from_list(rows)
loaded["ragas_csv"] = [[s.user_input, s.retrieved_contexts, s.response, s.reference, s.retrieved_context_ids]
                       for s in ds.samples]
d = DE(); d.add_goldens_from_json_file(out + "/mine.json")
loaded["deepeval_goldens"] = [[g.input, g.retrieval_context, g.actual_output, g.expected_output] for g in d.goldens]
d = DE()
d.add_test_cases_from_json_file(
    out + "/mine.json", input_key_name="input", actual_output_key_name="actual_output",
    expected_output_key_name="expected_output", retrieval_context_key_name="retrieval_context",
    context_key_name="context",
)
loaded["deepeval_test_cases"] = [[t.input, t.retrieval_context, t.actual_output, t.expected_output]
                                 for t in d.test_cases]
print(json.dumps(loaded, ensure_ascii=False))
"""


def peers(python: str, code: str, *args: str) -> str:
    env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "RAGAS_DO_NOT_TRACK": "true"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, env=env, timeout=600)
    if done.returncode:
        sys.exit(f"the peers' Python failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers-python", required=True, help="a Python with ragas and deepeval installed")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="peers-"))
    ok = True

    def check(what: str, holds: bool) -> None:
        nonlocal ok
        ok &= holds
        print(f"{'ok  ' if holds else 'FAIL'} {what}")

    versions = json.loads(peers(args.peers_python, WRITE, str(out), json.dumps(SAMPLES)))
    print("versions:", versions)
    expected = pl.DataFrame(SAMPLES)
    for name in ("ragas.jsonl", "ragas.csv"):
        got = rf.read_dataset(out / name, format="ragas")
        check(
            f"ragas {versions['ragas']} {name} read by rf.read_dataset equals the samples",
            got.select(expected.columns).equals(expected),
        )
    cols = ["question", "contexts", "answer", "ground_truth", "reference_contexts"]
    for name in ("goldens.json", "test_cases.json"):
        got = rf.read_dataset(out / name, format="deepeval")
        check(
            f"deepeval {versions['deepeval']} {name} read by rf.read_dataset equals the samples",
            got.select(cols).equals(expected.select(cols)),
        )

    log = pl.read_parquet(example_rag_log())
    frame = log.select(
        "question",
        "answer",
        "contexts",
        pl.format("reference for {}", pl.col("id")).alias("ground_truth"),
        pl.concat_list(pl.format("ares-{}", pl.col("id"))).alias("retrieved_ids"),
    )
    rf.write_dataset(frame, out / "mine.jsonl", format="ragas")
    rf.write_dataset(frame, out / "mine.csv", format="ragas")
    rf.write_dataset(frame, out / "mine.json", format="deepeval")
    loaded = json.loads(peers(args.peers_python, LOAD, str(out)))
    ragas_rows = [
        list(r) for r in frame.select("question", "contexts", "answer", "ground_truth", "retrieved_ids").rows()
    ]
    check(
        f"ragframe's ragas JSONL ({frame.height} ARES rows) loads in ragas equal", loaded["ragas_jsonl"] == ragas_rows
    )
    check(f"ragframe's ragas CSV ({frame.height} ARES rows) loads in ragas equal", loaded["ragas_csv"] == ragas_rows)
    deep_rows = [list(r) for r in frame.select("question", "contexts", "answer", "ground_truth").rows()]
    check("ragframe's deepeval JSON loads as deepeval goldens equal", loaded["deepeval_goldens"] == deep_rows)
    check("ragframe's deepeval JSON loads as deepeval test cases equal", loaded["deepeval_test_cases"] == deep_rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
