"""Test sets from documents: :func:`generate_testset` and the qrels of a set (:func:`generated_qrels`)."""

from ragframe.testsets.generate import generate_testset
from ragframe.testsets.qrels import generated_qrels, generation_rejections

__all__ = ["generate_testset", "generated_qrels", "generation_rejections"]
