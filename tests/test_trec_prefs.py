"""trec_eval's preference measures (``-R prefs``, ``-R qrels_prefs``), by hand.

trec_eval's own expected outputs (``out.test.prefs``, ``out.test.qrels_prefs``) are checked
byte for byte in ``tests/test_trec_suite.py``; these cases check each rule on collections
small enough to count by hand: equivalence classes, transitivity across judgment
sub-groups, disagreeing judgment groups (where ``prefs_simp``, ``prefs_pair`` and
``prefs_avgjg`` part), the ``Rnonrel`` rescaling, ``-c`` and the inconsistencies trec_eval
refuses.
"""

from __future__ import annotations

import polars as pl
import pytest
from conftest import LOCAL_DATA

from ragframe.cli.main import main
from ragframe.exceptions import SchemaError
from ragframe.kernels.trec_prefs import PREFERENCE_MEASURES, preference_measures

TE = LOCAL_DATA / "trec_eval"


def _run(*docs: str, query: str = "q") -> pl.DataFrame:
    """A run ranking ``docs`` in the given order."""
    n = len(docs)
    return pl.DataFrame({"query_id": [query] * n, "doc_id": list(docs), "score": [float(n - i) for i in range(n)]})


def _prefs(*lines: tuple[str, str, str, float], query: str = "q") -> pl.DataFrame:
    return pl.DataFrame(
        [(query, *line) for line in lines],
        schema={"query_id": pl.String, "jg": pl.String, "jsg": pl.String, "doc_id": pl.String, "rel_level": pl.Float64},
        orient="row",
    )


def test_equivalence_classes_by_hand():
    """trec_eval's example: levels 3, 2, 0, 6, 0, 2 state 13 preferences.

    The run retrieves docno4, docno1, docno2: docid ranks 0, 1, 2; then docno3, docno5, docno6
    (not retrieved, by docno) 3, 4, 5. Fulfilled: 3 among retrieved, 8 implied; 2 with neither
    retrieved (5 > 3, 5 > 4: docno6 over the two non-relevant ones) are never fulfilled.
    """
    prefs = _prefs(
        ("u", "1", "docno1", 3.0),
        ("u", "1", "docno2", 2.0),
        ("u", "1", "docno3", 0.0),
        ("u", "1", "docno4", 6.0),
        ("u", "1", "docno5", 0.0),
        ("u", "1", "docno6", 2.0),
    )
    row = preference_measures(_run("docno4", "docno1", "docno2", "x"), prefs).row(0, named=True)
    assert (row["prefs_num_prefs_poss"], row["prefs_num_prefs_ful"], row["prefs_num_prefs_ful_ret"]) == (13, 11, 3)
    assert row["prefs_simp"] == row["prefs_pair"] == row["prefs_avgjg"] == 11 / 13
    assert row["prefs_simp_ret"] == row["prefs_pair_ret"] == row["prefs_avgjg_ret"] == 1.0
    assert row["prefs_simp_imp"] == row["prefs_pair_imp"] == row["prefs_avgjg_imp"] == 1.0
    # R = 4 relevant lines >= N = 2 non-relevant: (11 + 3 relevant retrieved x 2) / (13 + 4 x 2)
    assert row["prefs_avgjg_Rnonrel"] == 17 / 21
    # retrieved only: R = 3, N = 0: (3 + 3 x 3) / (3 + 4 x 3)
    assert row["prefs_avgjg_Rnonrel_ret"] == 12 / 15


def test_sub_groups_are_closed_under_transitivity():
    """sub1: 1 > 2 > 3, sub2: 2 > 4: five preferences (1 > 4 is implied), none fulfilled by ranking 4, 3."""
    prefs = _prefs(
        ("u", "sub1", "docno1", 3.0),
        ("u", "sub1", "docno2", 2.0),
        ("u", "sub1", "docno3", 1.0),
        ("u", "sub2", "docno2", 5.0),
        ("u", "sub2", "docno4", 4.0),
    )
    row = preference_measures(_run("docno4", "docno3"), prefs).row(0, named=True)
    assert (row["prefs_num_prefs_poss"], row["prefs_num_prefs_ful"]) == (5, 0)
    assert row["prefs_simp"] == 0.0 and row["prefs_simp_imp"] == 0.0  # 4 implied, all failed
    reversed_row = preference_measures(_run("docno1", "docno2", "docno3", "docno4"), prefs).row(0, named=True)
    assert (reversed_row["prefs_num_prefs_ful"], reversed_row["prefs_num_prefs_ful_ret"]) == (5, 5)


def test_judgment_groups_that_disagree():
    """u1: a > b, u2: b > a, u3: a > c. simp 2/3 (preferences), avgjg 2/3 (groups), pair (1/2 + 1)/2 (pairs)."""
    prefs = _prefs(
        ("u1", "1", "a", 2.0),
        ("u1", "1", "b", 1.0),
        ("u2", "1", "a", 0.0),
        ("u2", "1", "b", 1.0),
        ("u3", "1", "a", 1.0),
        ("u3", "1", "c", 0.0),
    )
    row = preference_measures(_run("a", "b"), prefs).row(0, named=True)
    assert row["prefs_simp"] == 2 / 3 and row["prefs_avgjg"] == 2 / 3
    assert row["prefs_pair"] == 0.75 and row["prefs_pair_ret"] == 0.5 and row["prefs_pair_imp"] == 0.75
    assert row["prefs_simp_ret"] == 0.5
    assert row["prefs_avgjg_ret"] == (1.0 + 0.0) / 3  # u3 has no retrieved pair: it adds nothing, still counts


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ((("u", "1", "a", 1.0), ("u", "1", "a", 0.0), ("u", "1", "b", 0.0)), "two relevance levels"),
        ((("u", "s1", "a", 2.0), ("u", "s1", "b", 1.0), ("u", "s2", "b", 2.0), ("u", "s2", "a", 1.0)), "both ways"),
        ((("u", "s1", "a", 0.0), ("u", "s1", "b", 1.0), ("u", "s2", "a", 3.0), ("u", "s2", "c", 1.0)), "level 0 and"),
    ],
    ids=["two-levels-in-one-class", "cycle-across-sub-groups", "zero-and-relevant"],
)
def test_inconsistent_preferences_are_refused(lines, message):
    with pytest.raises(SchemaError, match=message):
        preference_measures(_run("a", "b"), _prefs(*lines))


def test_complete_scores_a_query_the_run_lacks(capsys):
    lines = (("u", "1", "a", 1.0), ("u", "1", "b", 0.0))
    prefs = pl.concat([_prefs(*lines), _prefs(*lines, query="r")])
    plain = preference_measures(_run("a", "b"), prefs)
    assert plain["query_id"].to_list() == ["q"]
    complete = preference_measures(_run("a", "b"), prefs, complete=True)
    assert complete["query_id"].to_list() == ["q", "r"]
    assert complete.row(1, named=True)["prefs_num_prefs_poss"] == 1 and complete.row(1, named=True)["prefs_simp"] == 0.0
    assert complete.columns == ["query_id", *PREFERENCE_MEASURES]


@pytest.mark.slow
def test_qrels_read_as_preferences_by_the_command_line(capsys):
    """-R qrels_prefs on qrels.test: the summary's counts are sums, the ratios means (out.test.qrels_prefs)."""
    code = main(["trec", "-R", "qrels_prefs", "-m", "prefs_num_prefs_poss", "-m", "prefs_simp", str(TE / "qrels.test"),
                 str(TE / "results.test")])  # fmt: skip
    out = capsys.readouterr().out
    expected = [
        line
        for line in (TE / "out.test.qrels_prefs").read_text(encoding="utf-8").splitlines()
        if "\tall\t" in line and line.split("\t")[0].strip() in ("num_q", "prefs_num_prefs_poss", "prefs_simp")
    ]
    assert code == 0 and out.splitlines() == expected[1:]
