"""A scripted judge for the test-set generator: replies derived from the prompt, with every failure on cue.

:class:`ScriptedTestsetJudge` reads a generation prompt's passages and writes a question whose
content words come from the first passage's first sentence, that sentence (and the other
passages' first sentences) as the answer, and one ``Fact:`` line per passage. A grounding
prompt (ragframe's faithfulness template) gets ``Verdict: yes`` (``no`` when the answer holds
:data:`DENY`).

Failures come on cue, from a word in the first passage, or (``rates``) for a seeded share of
prompts, chosen by a hash of the first passage so the same prompt always fails the same way:

``GARBAGE``    a reply without any of the lines, every time (a ``parse_error`` after the re-asks)
``REFUSE``     "I'm sorry, but I can't help with that." every time (a ``parse_error``)
``FLAKY``      garbage first; the re-ask (the prompt with the runner's reminder) gets a good reply
``DUPLICATE``  a question on the passage's two commonest content words (passages on one subject collide)
``UNGROUNDED`` an answer the passage does not support ("Bananas ..."): the grounding filter drops it
``GENERIC``    a question without the passage's words ("What is the main idea discussed here?")
``RATE``       raises :class:`ragframe.judges.JudgeRateLimited` (a 429 that outlived its retries)
``TIMEOUT``    raises :class:`TimeoutError`
``DENY``       a good reply whose answer the grounding judge then denies (with ``grounding_band=(0, 1)``)
``PARTIAL``    the passage's sentence plus an invented one: heuristic faithfulness in the band, the judge says no
``HEDGE``      the passage's sentence plus a harmless one: in the band, the judge says yes
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter
from collections.abc import Mapping

from ragframe.judges import CallableJudge, JudgeRateLimited

__all__ = ["ScriptedTestsetJudge", "FAULTS", "passages_of"]

FAULTS = (
    "GARBAGE", "REFUSE", "FLAKY", "DUPLICATE", "UNGROUNDED", "GENERIC", "RATE", "TIMEOUT", "DENY", "PARTIAL", "HEDGE",
)  # fmt: skip
_STOP = {"the", "and", "that", "with", "from", "this", "which", "have", "were", "their", "there", "what", "when"}
_PASSAGE = re.compile(r"(?:^|\n\n)\[\d+\] ")


def passages_of(prompt: str) -> list[str]:
    """The passages a generation or grounding prompt shows (between its heading and its instructions)."""
    for head in ("Passages:\n", "Passage:\n", "Context passages:\n"):
        if head in prompt:
            body = prompt.split(head, 1)[1]
            end = re.search(r"\n\n(?!\[\d+\] )", body)
            body = body[: end.start()] if end else body
            return [p.strip() for p in _PASSAGE.split("\n\n" + body) if p.strip()]
    return []


def _first_sentence(text: str) -> str:
    sentence = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0].strip()
    return sentence if sentence.endswith((".", "!", "?")) else sentence + "."


def _content_words_all(text: str) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z][A-Za-z0-9-]{3,}", text) if w.lower() not in _STOP and w not in FAULTS]


def _content_words(text: str, k: int) -> list[str]:
    return list(dict.fromkeys(_content_words_all(text)))[:k]


class ScriptedTestsetJudge:
    """A callable ``prompt -> str`` (see the module doc); ``calls`` counts the prompts it was sent.

    Parameters
    ----------
    rates : mapping, optional
        {fault: share of prompts} for passages without a cue word (shares add up to at most 1).
    seed : int
        Seeds which prompts the rates pick.
    """

    def __init__(self, rates: Mapping[str, float] | None = None, seed: int = 0) -> None:
        self.rates = dict(rates or {})
        self.seed = seed
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def judge(self) -> CallableJudge:
        """This judge, named for the reply cache by its rates and seed."""
        return CallableJudge(self, name=f"scripted-testset-{sorted(self.rates.items())}-{self.seed}")

    def fault(self, first: str) -> str | None:
        """The fault a prompt whose first passage is ``first`` gets (a cue word, else the seeded rates)."""
        for word in FAULTS:
            if word in first:
                return word
        if not self.rates:
            return None
        draw = int.from_bytes(hashlib.blake2b(f"{self.seed}|{first}".encode(), digest_size=8).digest(), "big") / 2**64
        edge = 0.0
        for word in FAULTS:
            edge += self.rates.get(word, 0.0)
            if draw < edge:
                return word
        return None

    def __call__(self, prompt: str) -> str:
        kind = "grounding" if prompt.startswith("You check whether an answer") else "generation"
        with self._lock:
            self.calls[kind] += 1
        if kind == "grounding":
            return self._grounding(prompt)
        passages = passages_of(prompt)
        first = passages[0] if passages else ""
        fault = self.fault(first)
        reask = "could not be read" in prompt
        if fault == "RATE":
            raise JudgeRateLimited("429 Too Many Requests (scripted)", retries=2)
        if fault == "TIMEOUT":
            raise TimeoutError("scripted timeout")
        if fault == "GARBAGE" or (fault == "FLAKY" and not reask):
            return "Here are some thoughts about the passages!!! {json: maybe}"
        if fault == "REFUSE":
            return "I'm sorry, but I can't help with that."
        return self._generation(prompt, passages, fault)

    def _generation(self, prompt: str, passages: list[str], fault: str | None) -> str:
        sentences = [_first_sentence(p) for p in passages] or ["Nothing."]
        words = _content_words(sentences[0], 3) or ["things"]
        if prompt.startswith("You write one question for testing whether"):
            question = f"What was the exact budget in dollars of {' '.join(words)}?"
            return f"Question: {question}\nAnswer: The passage does not say."
        if fault == "DUPLICATE":  # the passage's two commonest content words: passages on one subject collide
            counts = Counter(w.lower() for w in _content_words_all(passages[0]))
            top = sorted(counts, key=lambda w: (-counts[w], passages[0].lower().index(w)))[:2]
            question = f"What is stated about {' '.join(top)}?"
        elif fault == "GENERIC":
            question = "What is the main idea discussed here?"
        elif len(passages) > 1:
            other = _content_words(sentences[1], 2) or ["others"]
            question = f"How does {' '.join(words)} relate to {' '.join(other)}?"
        else:
            question = f"What is stated about {' '.join(words)}?"
        answer = " ".join(sentences)
        if fault == "UNGROUNDED":
            answer = "Bananas are purple and sing quietly at midnight on Jupiter."
        elif fault == "PARTIAL":
            answer = f"{sentences[0]} Bananas are purple and sing quietly at midnight on Jupiter."
        elif fault == "HEDGE":
            answer = f"{sentences[0]} Readers often ask about this point."
        facts = "\n".join(f"Fact: {s}" for s in sentences) if fault != "UNGROUNDED" else f"Fact: {answer}"
        return f"Question: {question}\nAnswer: {answer}\n{facts}"

    def _grounding(self, prompt: str) -> str:
        answer = prompt.split("Answer:\n", 1)[1].split("\n\nInstructions:", 1)[0] if "Answer:\n" in prompt else ""
        verdict = "no" if ("DENY" in prompt or "Bananas" in answer) else "yes"
        score = 1 if verdict == "yes" else 0
        return f"Claim: {answer.strip()[:200]}\nVerdict: {verdict}\nScore: {score}/1\nReason: scripted."
