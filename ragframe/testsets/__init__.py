"""Test sets from documents: :func:`generate_testset` and the qrels of a set (:func:`testset_qrels`)."""

from ragframe.testsets.generate import generate_testset
from ragframe.testsets.qrels import testset_qrels, testset_rejections

__all__ = ["generate_testset", "testset_qrels", "testset_rejections"]
