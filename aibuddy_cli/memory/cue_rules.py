"""What the rules of the cue gate (cues.py) are made of: lazily compiled patterns, the rule with
its flags, and the sentence tests the flags use, in both languages. The rules themselves are in
cue_rules_en.py and cue_rules_zh.py; the gate that applies them is cues.py."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple


class LazyPattern:
    """A regular expression compiled on its first use, then kept (see the module docstring)."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source, self._flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str) -> list[Any]:
        return self.compiled.findall(string)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str) -> str:
        return self.compiled.sub(repl, string)


# A sentence about the here and now: today, this time, "this warning" (an item at hand, not a
# container such as "this repo").
HERE_AND_NOW = (
    r"\b(?:today|tonight|tomorrow|yesterday|right now|for now|at the moment|just this once|this time|"
    r"this (?:morning|afternoon|evening|weekend|week)|for (?:this|that) (?:one|email|report|document|doc|"
    r"message|answer|reply|file|task|trip|meeting|table|comparison|export)|(?:this|(?<!\w[s] )that|these|"
    r"those) (?!repo|repository|project|codebase|team|company|org|organi[sz]ation|house|household|family|"
    r"city|country|job|role|account|app|product|service|monorepo|workspace|office|department|kind|sort|type|"
    r"way|stuff|time)[a-z][\w-]*)\b|今天|今晚|明天|明早|后天|昨天|刚才|刚刚|这次|这回|马上|待会|等会|一会儿"
)
NOW = LazyPattern(HERE_AND_NOW)
# … or a booking-like appointment: next week, on Friday, at 8, 7pm.
ONE_OFF = LazyPattern(
    HERE_AND_NOW + r"|\b(?:next (?:week|month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|at \d|\d ?(?:am|pm))\b"
)
DURABLE = LazyPattern(
    r"\b(?:always|never|every|whenever|from now on|going forward|in future|in the future|by default|"
    r"each time|any time|anytime|all future|usually|generally|in general|as a rule|anymore|any more|"
    r"for (?:the |all )?future|on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|"
    r"weekends|weekdays)|every (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|morning|"
    r"evening|night|day|week|month)|most (?:days|weeks|nights|mornings|evenings|weekends))\b|以后|今后|往后|"
    r"每次|一直|总是|永远|默认|一律|统一|向来|从来|平时|通常"
)
# A question: an English sentence that opens with an interrogative word or auxiliary and ends with
# "?" ("Is the deadline in April?", not "I'm a nurse, what should I take?"), or a Chinese one with
# a question particle or word.
QUESTION = LazyPattern(
    r"^(?:how|what|what's|why|when|where|which|who|whom|whose|is|are|was|were|do|does|did|can|could|would|"
    r"will|should|shall|may|might|have|has|had|am|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|"
    r"shouldn't|can't|any|anyone)\b.*\?$|[吗呢][\s.?]*$|哪|什么|多少|几点|几号|谁|怎么"
)



class Rule(NamedTuple):
    kind: str
    pattern: LazyPattern
    soft: bool  # does not count in a one-off sentence without a durability marker
    habitual: bool  # does not count in a sentence about the here and now, whatever its adverbs
    statement: bool  # does not count in a question
    durable: bool  # counts only with a durability marker in the sentence (always, every, from now on…)


def rule(
    kind: str,
    pattern: str,
    *,
    soft: bool = False,
    habitual: bool = False,
    statement: bool = False,
    durable: bool = False,
) -> Rule:
    return Rule(kind, LazyPattern(pattern), soft, habitual, statement, durable)
