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
    r"way|stuff|time|(?:i|we|you|he|she|they|my|our)\b)[a-z][\w-]*)\b|今天|今晚|明天|明早|后天|昨天|刚才|刚刚|这次|这回|马上|待会|等会|一会儿"
)
NOW = LazyPattern(HERE_AND_NOW)
# … or a booking-like appointment: next week, on Friday, at 8, 7pm.
ONE_OFF = LazyPattern(
    HERE_AND_NOW + r"|\b(?:next (?:week|month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|at \d|\d ?(?:am|pm))\b"
)
DURABLE = LazyPattern(
    r"\b(?:always|never|every|everyday|whenever|from now on|going forward|in future|in the future|by default|"
    r"each time|any time|anytime|all future|usually|generally|in general|as a rule|anymore|any more|"
    r"for (?:the |all )?future|on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|"
    r"weekends|weekdays)|every (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|morning|"
    r"evening|night|day|week|month)|most (?:days|weeks|nights|mornings|evenings|weekends))\b|以后|今后|往后|"
    r"每次|一直|总是|永远|默认|一律|统一|向来|从来|平时|通常|多年|"
    r"(?:[\d一二三四五六七八九十两]+|好几|十几|几十)年了"  # 我开出租车二十年了: a pursuit of years
)
# A question: an English sentence that opens with an interrogative word or auxiliary and ends with
# "?" ("Is the deadline in April?", not "I'm a nurse, what should I take?"), or a Chinese one with
# a question particle or word.
QUESTION = LazyPattern(
    r"^(?:how|what|what's|why|when|where|which|who|whom|whose|is|are|was|were|do|does|did|can|could|would|"
    r"will|should|shall|may|might|have|has|had|am|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|"
    r"shouldn't|can't|any|anyone)\b.*\?$|[吗呢][\s.?]*$|哪|什么|多少|几点|几号|谁|怎么|啥|咋|多远|多久|多长|"
    r"有没有|是不是|能不能|可不可以|要不要|好不好|行不行|[\u4e00-\u9fff][^.!?;。]*\?$"
)



# A sentence about a booking at hand: what is booked (a ride, a table for four, two tickets, the
# 7 pm one), or one of its slots (a date, a clock time, how many people, a street address).
# A preference or first-person statement in such a sentence chooses among the options of the
# task ("I'd prefer a luxury ride", "No, I want the 7 pm one"), it does not describe the user.
_BOOKED = (
    r"ride|rides|cab|cabs|taxi|uber|lyft|shuttle|bus|buses|train|trains|flight|flights|plane|ticket|"
    r"tickets|seat|seats|room|rooms|suite|table|reservation|reservations|booking|bookings|appointment|"
    r"appointments|showing|screening|check-?in|check-?out|departure|arrival|pick-?up|drop-?off|"
    r"destination|itinerary|fare|fares|rental|one-?way|round-?trip|trip|restaurant|hotel|motel|hostel|"
    r"salon|stylist|dentist|doctor|place"
)
_NUMBER = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
TASK = LazyPattern(
    rf"\b(?:prefer|like|love|want|wanna|need|take|choose|pick|go with|go for|book|reserve|get|find|"
    rf"rather have|change|move|cancel|make|schedule|buy|purchase|order|rent|hire)\s+(?:a|an|the|one|two|"
    rf"three|four|another|this|that|these|those|my|our|\d+)\s+(?:[\w'-]+\s+){{0,3}}?(?:{_BOOKED})\b"
    rf"|\b(?:a|an|the|one|two|three|four|another|this|that|my|our|\d+)\s+(?:[\w'-]+\s+){{0,2}}?(?:ride|rides|"
    rf"seat|seats|reservation|reservations|booking|bookings|appointment|appointments|showing|screening|"
    rf"fare|one-?way|round-?trip|check-?in|check-?out|price range|part of town|side of town|star rating)\b"
    rf"|\b(?:book|reserve|buy|purchase|cancel|schedule|order|rent) (?:it|them|one|that|this)\b"
    rf"|\b(?:the|this|that|a|an) (?:[\w'-]+ )?one(?=\s*(?:[,.!?;]|$)|\s+(?:instead|please|then|for|at|on|"
    rf"from|to|with|and|but|not|rather|i|that|which)\b)"
    r"|\b(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|"
    r"mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.? \d{1,2}(?:st|nd|rd|th)?\b"
    r"|\bthe \d{1,2}(?:st|nd|rd|th)\b(?! (?!of\b)[a-z])|\b\d{1,2}(?::\d{2})? ?(?:am|pm|a\.m\.|p\.m\.)"
    r"|\b\d{1,2}:\d{2}\b|\bo'clock\b|\binstead\b(?! of)"
    rf"|\bfor {_NUMBER}(?: (?:people|persons|guests|adults|passengers|of us))?(?=\s*(?:[,.!?;]|$)|"
    rf"\s+(?:people|persons|guests|adults|passengers|please|at|on|in|to|from|and|tonight|tomorrow)\b)"
    rf"|\b{_NUMBER} (?:people|persons|guests|adults|passengers|tickets|seats|rooms)\b|\b(?:party|group) of\b"
    rf"|\bthere (?:are|will be|is) (?:{_NUMBER}|only|just)\b|\bwe(?:'re| are| will be) (?:{_NUMBER}|a group|"
    rf"a party)\b|\b\d{{2,6}} [a-z][\w .'-]{{0,30}}?\b(?:street|st|avenue|ave|road|rd|boulevard|blvd|drive|"
    rf"dr|way|lane|ln|court|ct|highway|hwy)\b"
    # … in Chinese: 订/找/去/住 a hotel, a restaurant; tickets, rooms, seats, a taxi, a class of travel
    r"|(?:订|预订|预约|找|查|去|住|要|换|改|取消|推荐|叫|打)[^,。.!?]{0,8}?(?:酒店|宾馆|民宿|饭店|餐馆|餐厅|饭馆|"
    r"景点|景区|地方|车|房)|门票|[车机船]票|电影票|(?<![邮钞股彩发])票|[大双单]床房|标准间|单人间|双人间|包间|"
    r"包房|位子|座位|出租车|专车|快车|航班|车次|班次|外卖|订单|评分|人均|营业时间|[经商头]\w?舱|"
    # … how many: N people (我一个人 alone is an answer, 我一个人住 a way of life), nights, who comes along
    r"我一个人(?=\s*(?:[,.!?;。]|$))|(?<!我)[一二两三四五六七八九十\d]+(?:个人|位(?!置)|人(?!家))|"
    r"[一两二三四五六七八九十\d]+(?:晚|夜)(?![上饭餐])|带(?:着|了)?[一两二三四五六七八九十几\d]+个|"
    # … the day of the month (十五号), not a line, a building or a size
    r"(?<![\d一二三四五六七八九十])[0-9一二三四五六七八九十]{1,3}号(?![线楼门院床码])"
)


class Rule(NamedTuple):
    kind: str
    pattern: LazyPattern
    soft: bool  # does not count in a one-off sentence without a durability marker
    habitual: bool  # does not count in a sentence about the here and now, whatever its adverbs
    statement: bool  # does not count in a question
    durable: bool  # counts only with a durability marker in the sentence (always, every, from now on…)
    choice: bool  # does not count in a sentence about a booking (TASK) without a durability marker


def rule(
    kind: str,
    pattern: str,
    *,
    soft: bool = False,
    habitual: bool = False,
    statement: bool = False,
    durable: bool = False,
    choice: bool = False,
) -> Rule:
    return Rule(kind, LazyPattern(pattern), soft, habitual, statement, durable, choice)
