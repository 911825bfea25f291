"""LLM judges: any callable ``prompt -> str`` or :class:`OpenAIJudge`, run with bounded concurrency,
rate limits, retries and a persistent cache, never losing a result."""

from ragframe.judges.base import (
    STATUSES,
    CallableJudge,
    Judge,
    JudgeCallError,
    JudgeHTTPError,
    JudgeRateLimited,
    JudgeReply,
    JudgeTimeout,
    as_judge,
)

__all__ = [
    "STATUSES",
    "CallableJudge",
    "Judge",
    "JudgeCallError",
    "JudgeHTTPError",
    "JudgeRateLimited",
    "JudgeReply",
    "JudgeTimeout",
    "as_judge",
]
