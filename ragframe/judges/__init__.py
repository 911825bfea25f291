"""LLM judges: any callable ``prompt -> str`` or :class:`OpenAIJudge`, run with bounded concurrency,
rate limits, retries and a persistent cache, never losing a result."""

from ragframe.judges.base import (
    FAILED_STATUSES,
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
from ragframe.judges.cache import CachedReply, JudgeCache, cache_key, default_cache_path
from ragframe.judges.client import OpenAIJudge
from ragframe.judges.limits import RateLimiter
from ragframe.judges.parse import ParsedReply, parse_replies, parse_reply, read_score
from ragframe.judges.runner import ajudge_prompts, judge_prompts
from ragframe.judges.usage import JudgeUsage, judge_usage, recording_usage

__all__ = [
    "STATUSES",
    "FAILED_STATUSES",
    "CallableJudge",
    "Judge",
    "JudgeCallError",
    "JudgeHTTPError",
    "JudgeRateLimited",
    "JudgeReply",
    "JudgeTimeout",
    "as_judge",
    "CachedReply",
    "JudgeCache",
    "cache_key",
    "default_cache_path",
    "OpenAIJudge",
    "RateLimiter",
    "ParsedReply",
    "parse_replies",
    "parse_reply",
    "read_score",
    "ajudge_prompts",
    "judge_prompts",
    "JudgeUsage",
    "judge_usage",
    "recording_usage",
]
