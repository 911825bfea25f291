"""Reductions over scored frames: summaries, paired comparisons, regressions and the gate, agreement."""
