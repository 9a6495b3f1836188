"""The deterministic cue gate of automatic memory extraction (English and Chinese).

A cue only opens the gate: the `extract` model decides what, if anything, to keep. The gate is
meant to open on statements of something lasting (a preference, who the user is, feedback on the
assistant, a project fact) and to stay shut on task chatter, so no model is called for "I need a
train to Boston".

Reading a turn
* Normalised: Unicode NFKC (full-width punctuation and letters become ASCII: ，→ , ：→ : ？→ ?),
  curly quotes and apostrophes made straight (「」『』 become double quotes), whitespace collapsed,
  case-folded, and "im", "dont", "thats"… read as "i'm", "don't", "that's".
* Not read, as pasted or quoted material rather than the user's own words: fenced code blocks
  (``` or ~~~, to the closing fence or the end of the turn); indented code (lines starting with
  a tab or four spaces); quoted lines (``>``); log and trace lines (a leading timestamp or log
  level, ``Traceback``, ``File "…", line N``, ``at f (…)``, ``npm ERR!``, ``SomeError:``); inline
  code spans; short double-quoted spans (a phrase mentioned, not said: 'how do you say "I prefer
  tea" in French?'); whatever follows a line or colon that hands over material ("Proofread my
  bio:", "Here's my draft, can you tighten it?", "帮我润色下面这段："); and any line or
  blank-line-separated paragraph of 800 characters or more. Of the prose left, only the first
  600 characters are read.
* Then split into sentences, each keeping its closing punctuation.

What counts
Patterns describe phenomena, not sentences: first-person preference verbs with adverbs and
punctuation allowed between the words ("Please, always prefer", "I really, really dislike",
"I'd honestly rather", 我真的，真的很讨厌); durable markers (from now on, by default, whenever
you…, if you ever…, 以后都…, 今后, 默认, 每次…都); habits (I usually…, 我一般…, 我一…就…);
identity and biography (name, age, job, where I live or grew up, health and allergies, family,
diet, languages); corrections and feedback on the assistant (no, that's wrong…, you keep…, too
verbose, 你又…, 别再…); durable project facts (our team uses…, the deadline moved to…, 我们组一直
用…). Known traps are excluded: 以后 as "after" (下班以后), 应该 as "probably" (明天应该会下雨),
叫车 and 帮我叫… against 我叫李雷, "call me a cab" against "call me Sam".

Rules carry flags: a "soft" rule does not count in a one-off sentence (today, at 8, on Friday,
"this slide", 今天, 这次…) unless the sentence also has a durability marker; a "habitual" rule
does not count in a sentence about the here and now at all ("I usually get this warning"); a
"statement" rule does not count in a question ("Is the deadline in April?", 截止日期是哪天？); a
"durable" rule (I want / need) counts only with a durability marker. In English only, a turn that
asks nothing also opens the gate on a first-person declarative sentence that is not a want, not
in the progressive and not about the here and now ("I coach my son's team on Saturdays").

Cost: pure `re`, stdlib only. Each pattern is compiled once per process, on first use (≈70 ms
for all of them), so importing the module compiles nothing; a turn then costs ≈0.1-0.4 ms, and
at worst a few ms (fuzzed): every pattern runs on sentences cut to the 600-character window.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

CUE_KINDS: tuple[str, ...] = ("preference", "identity", "feedback", "project")

PROSE_LIMIT = 600  # characters of a turn's prose that are read
PASTED_PARAGRAPH = 800  # a paragraph at least this long is taken to be pasted material


class _Lazy:
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


# --- normalisation and removal of material that is not the user's own prose -------------------

_QUOTES = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u300c": '"', "\u300d": '"', "\u300e": '"', "\u300f": '"', "\u00ab": '"', "\u00bb": '"',
    }
)  # fmt: skip
_FENCE = _Lazy(r"^ {0,3}(`{3,}|~{3,})")
_LOG_LINE = _Lazy(
    r"""^\s*(?:
        \[?\d{4}-\d{2}-\d{2}[ t]\d                       # 2024-05-02 10:14:03 …
      | \[?\d{1,2}:\d{2}:\d{2}\b                         # 10:14:03 …
      | \[?(?:error|warn|warning|info|debug|trace|fatal|critical)\b\]?\s*[:\]|-]
      | traceback\ \(most\ recent\ call\ last\)
      | file\ ".*",\ line\ \d+
      | at\ \S+\ \(.*\)\s*$
      | npm\ err!
      | [\w.]*(?:error|exception|warning)(?::|$)          # KeyError: 'name'
      | \$[ ]|>>>[ ]|\.\.\.[ ]
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_INLINE_CODE = _Lazy(r"`[^`\n]*`")
_QUOTED_SPAN = _Lazy(r'"[^"\n]{1,200}"')
# A colon that hands over material: what follows it is not the user's own statement.
_INTRODUCER = _Lazy(
    r"\b(?:the\ following|following|below|here'?s|here\ is|here\ are|attached|my\ (?:bio|draft|cv|resume|"
    r"notes|post|essay|letter|code|text|message|email)|translate|summari[sz]e|proofread|rewrite|rephrase|"
    r"paraphrase|turn|convert|format|fix|check|review|polish|shorten|improve|reply\ to|respond\ to|output|"
    r"error|log|logs|says|said|wrote|writes|text|email|message|paragraph|sentence|snippet|quote)\b|下面|"
    r"下列|以下|如下|这段|这句|这篇|这封|这条|这份|这个|这是|翻译|总结|润色|改写|检查|回复|解释|格式化|报错|"
    r"日志|写道|内容",
    re.VERBOSE | re.IGNORECASE,
)
_THIS_AT_END = _Lazy(r"\b(?:this|these)(?: [\w'-]+){0,2}\s*$", re.IGNORECASE)  # "Can you fix this:"
_NOT_INTRODUCER = _Lazy(r"\b(?:remember|note|keep in mind|bear in mind)\b|记住|注意", re.IGNORECASE)
_THIS = _Lazy(r"\bth(?:is|ese)\b", re.IGNORECASE)
_COLON = _Lazy(":")
_TIME_OR_URL_COLON = _Lazy(r"\d:\d|\w+://")


def _strip_material(text: str) -> str:
    """The turn's own prose: code, quotes, logs and introduced material removed (see above)."""
    kept: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence:
                fence = None
            continue
        if marker:
            fence = marker.group(1)[0]
            continue
        if (
            len(line) >= PASTED_PARAGRAPH
            or line.startswith(("\t", "    "))
            or line.lstrip().startswith(">")
            or _LOG_LINE.match(line)
        ):
            kept.append("")  # keeps paragraph breaks where material was
            continue
        line = _QUOTED_SPAN.sub(" _ ", _INLINE_CODE.sub(" _ ", line))
        cut = _introduced(line)
        if cut is not None:
            kept.append(line[:cut])
            break
        kept.append(line)
        if line.rstrip().endswith("?") and _introduces(line.rstrip().rstrip("?")):
            break  # "Here's my draft, can you tighten it?" + the draft
    paragraphs = re.split(r"\n\s*\n", "\n".join(kept))
    prose = "\n".join(p for p in paragraphs if len(p) < PASTED_PARAGRAPH)
    return prose[:PROSE_LIMIT]


def _introduced(line: str) -> int | None:
    """Where the material introduced by a colon starts in `line`, if it does."""
    intro, guard = _INTRODUCER.search(line), _NOT_INTRODUCER.search(line)
    this = _THIS.search(line)
    for match in _COLON.finditer(line, 0, PROSE_LIMIT):  # nothing further along is read anyway
        start = match.start()
        if guard is not None and guard.start() < start:
            return None  # "Remember this: …", "Note: …" hand over nothing
        if _TIME_OR_URL_COLON.match(line, max(0, start - 1)) or line.startswith("//", start + 1):
            continue
        if (intro is not None and intro.end() <= start) or (
            this is not None and this.start() < start and _THIS_AT_END.search(line, max(0, start - 60), start)
        ):
            return start
    return None


def _introduces(head: str) -> bool:
    """Whether `head` (a line up to a colon or question mark) hands over material."""
    return bool(_INTRODUCER.search(head) or _THIS_AT_END.search(head)) and not _NOT_INTRODUCER.search(head)


def prose(text: str) -> str:
    """NFKC, straight quotes, own prose only (see above), whitespace collapsed; case kept."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"[ \t\f\v]+", " ", _strip_material(text)).strip()


_BARE_CONTRACTION = _Lazy(
    r"\b(?:(i)(m|ve)|(don|doesn|didn|can|won|isn|aren|wasn|shouldn|wouldn|couldn|haven)(t)|(that|you)(re|s|"
    r"ve))\b"
)


def _apostrophe(match: re.Match[str]) -> str:
    head, tail = [g for g in match.groups() if g is not None]
    return f"{head}'{tail}"


def normalise(text: str) -> str:
    """The turn as the patterns read it: its prose, case-folded, "im"/"dont" read as "i'm"/"don't"."""
    return _BARE_CONTRACTION.sub(_apostrophe, prose(text).casefold())


_SENTENCE = _Lazy(r"(?:[^!?;。\n.]|\.(?!\s|$))+(?:[!?;。.]+)?")


def sentences(text: str) -> list[str]:
    """A normalised turn split into sentences, each with its closing punctuation."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip(" \n.!?;。")]


# --- building blocks ----------------------------------------------------------------------------

# English adverbs, hedges and intensifiers that may sit between the words of a cue.
_ADV = (
    r"(?:[a-z]+ly|always|never|ever|much|very|so|just|also|still|quite|kinda|kind of|sort of|far|way|even|"
    r"do|does|did|would|will|a lot|a bit|a little|all|both|sometimes|often|myself|too|already|now|then|more|"
    r"most|in general|for sure|tend to)"
)  # "[a-z]+ly": really, honestly, usually, generally, personally, definitely, only…
_P = r"[\s,;:!.\-\u2013\u2014()]"  # punctuation and space between words
_G = rf"(?:{_P}+{_ADV}\b)*{_P}+"  # a gap: spaces/punctuation with any adverbs in between
_CS = (  # the start of a clause
    r"(?:^|(?<=[,;:.!?(\u2013\u2014\-\"])\s*|\b(?:please|pls|plz|kindly|and|but|so|just|also|then|oh|ok|"
    r"okay|yes|yeah|btw|fyi|honestly|seriously|actually|again|and please)\s+)"
)
_I = r"\bi(?!')"
_IM = r"\bi(?:'m| am)"
_ID = r"\bi(?:'d| would)"
_IV = r"\bi(?:'ve| have)"
# An object that makes a preference verb a reaction to the thing at hand ("I love this answer").
_DEICTIC = (
    r"(?!\s+(?:this|that|these|those|it\b(?!\s+(?:when|if|whenever))|the (?:idea|answer|one)|your (?:answer|"
    r"idea|suggestion|reply)))"
)

# Chinese: adverbs between 我 and the verb, and the punctuation that delimits a clause.
_ZADV = (
    r"(?:比较|很|非常|特别|真的|真|一直|向来|一向|从来|始终|总是|通常|一般|平时|平常|更|最|都|也|还是|其实|"
    r"个人|实在|确实|挺|蛮|不太|太|超级|超|相当|尤其|本来|就|还|十分|极其|有点|一点也|根本)"
)
_ZG = rf"(?:[\s,、!.~\u2026]*{_ZADV})*[\s,、!.~\u2026]*"
_ZCS = r"(?:^|(?<=[,、:;!?.\"\s]))"  # start of a Chinese clause
_ZME = r"(?<![帮给替让为叫请和跟对教问陪找])我"  # 我 as subject, not 帮我/给我/叫我…

# A sentence about the here and now: today, this time, "this warning" (an item at hand, not a
# container such as "this repo").
_HERE_AND_NOW = (
    r"\b(?:today|tonight|tomorrow|yesterday|right now|for now|at the moment|just this once|this time|"
    r"this (?:morning|afternoon|evening|weekend|week)|for (?:this|that) (?:one|email|report|document|doc|"
    r"message|answer|reply|file|task|trip|meeting|table|comparison|export)|(?:this|that|these|"
    r"those) (?!repo|repository|project|codebase|team|company|org|organi[sz]ation|house|household|family|"
    r"city|country|job|role|account|app|product|service|monorepo|workspace|office|department|kind|sort|type|"
    r"way|stuff|time)[a-z][\w-]*)\b|今天|今晚|明天|明早|后天|昨天|刚才|刚刚|这次|这回|马上|待会|等会|一会儿"
)
_NOW = _Lazy(_HERE_AND_NOW)
# … or a booking-like appointment: next week, on Friday, at 8, 7pm.
_ONE_OFF = _Lazy(
    _HERE_AND_NOW + r"|\b(?:next (?:week|month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|at \d|\d ?(?:am|pm))\b"
)
_DURABLE = _Lazy(
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
_QUESTION = _Lazy(
    r"^(?:how|what|what's|why|when|where|which|who|whom|whose|is|are|was|were|do|does|did|can|could|would|"
    r"will|should|shall|may|might|have|has|had|am|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|"
    r"shouldn't|can't|any|anyone)\b.*\?$|[吗呢][\s.?]*$|哪|什么|多少|几点|几号|谁|怎么"
)


class _Rule(NamedTuple):
    kind: str
    pattern: _Lazy
    soft: bool  # does not count in a one-off sentence without a durability marker
    habitual: bool  # does not count in a sentence about the here and now, whatever its adverbs
    statement: bool  # does not count in a question
    durable: bool  # counts only with a durability marker in the sentence (always, every, from now on…)


def _rule(
    kind: str,
    pattern: str,
    *,
    soft: bool = False,
    habitual: bool = False,
    statement: bool = False,
    durable: bool = False,
) -> _Rule:
    return _Rule(kind, _Lazy(pattern), soft, habitual, statement, durable)


_RULES: tuple[_Rule, ...] = (
    # ---- preference ----------------------------------------------------------------------------
    _rule(  # I (really, really) prefer / dislike / can't stand …
        "preference",
        rf"{_I}{_G}(?:(?:don't|do not|didn't|never|not|no longer)(?:{_G}))?(?:prefer|like|love|adore|enjoy|"
        rf"hate|dislike|detest|loathe|despise|can't stand|cannot stand|can't bear|don't like|do not like|"
        rf"don't want|don't care for|don't enjoy|avoid|favou?r|appreciate|like it|love it|"
        rf"hate it)\b{_DEICTIC}",
        soft=True,
    ),
    _rule(  # I'd (honestly) rather / prefer / always choose
        "preference",
        rf"{_ID}{_G}(?:rather|prefer|choose|pick|go for|take)\b",
        soft=True,
    ),
    _rule(  # want / need / would like: requests, unless the sentence is durable
        "preference",
        rf"{_I}(?:'d)?{_G}(?:want|need|would like|like)\b",
        durable=True,
    ),
    _rule("preference", r"\bfor (?:the |all )?future(?: reference| \w+)?\s*[:,]"),
    _rule("preference", r"\bmy (?:\w+ )?(?:favou?rite|go-to|preferred)\b|\bfavou?rite (?:\w+ )?is\b"),
    _rule(  # I'm a big fan of … / more of a tea person / not a fan of …
        "preference",
        rf"{_IM}{_G}(?:not )?(?:more of )?an? (?:[\w-]+ ){{0,2}}(?:fan|lover|person|fanatic|enthusiast|"
        rf"snob)\b|{_IM}{_G}(?:not )?into\b|\bnot (?:a |much of a |really a |the )?(?:big |huge )?fan of\b",
    ),
    _rule(  # I usually / never / tend to … (habitual first person)
        "preference",
        rf"{_I} (?:\w+ly )?(?:usually|normally|typically|generally|always|never|tend to|mostly|rarely|"
        rf"seldom|only ever|almost always|almost never|habitually)\b",
        habitual=True,
        statement=True,
    ),
    _rule(  # (please,) always / never + verb, imperative
        "preference",
        rf"{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:always|never)\b(?!{_P}*mind\b)(?!\s+(?:again|ever)\b)",
    ),
    _rule(  # durable time markers addressed to the assistant
        "preference",
        r"\b(?:from now on|going forward|moving forward|from here on(?: out)?|henceforth|for all future|"
        r"in all future|by default|as a rule|as a default|whenever (?:you|possible|i|we)|"
        r"where(?:ver)? possible|every (?:single )?time you|each time you|any ?time you|"
        r"in (?:the )?future(?=\s*[,.;!:]|\s*$|\s+(?:please|always|never|just|use|don't|do|make|remember|"
        r"ask|keep|avoid|try|i|you|when)\b)|(?:every|each) (?:single )?time(?=\s*[,.;!:]|\s*$)|"
        r"all the time(?=\s*[,.;!:]|\s*$))",
    ),
    _rule(  # When you suggest restaurants, … / Use 24-hour time with me
        "preference",
        rf"\b(?:when|whenever|whatever|everything|anything|each time|every time) you (?!have|are|'re|get|"
        rf"can|could|find|finish|see|arrive|know|think|hear|need|want|wake|come|go)[a-z]+\b|\b(?:when|"
        rf"whenever|whatever|everything|anything|each time|every time) (?:you|we) (?:suggest|recommend|"
        rf"write|answer|reply|respond|give|draft|plan|book|summari[sz]e|explain|translate|review|send|make|"
        rf"create|generate|pick|choose|list|format|quote|code|name|schedule)\b|{_CS}(?:(?:please|pls|plz|"
        rf"kindly){_G})?(?:use|speak|talk|write|answer|reply|be|stay|communicate|"
        rf"address)\b[^.!?]{{0,40}}\b(?:with|to) me\b",
    ),
    _rule(
        "preference",
        rf"{_IM}{_G}(?:picky|particular|fussy|strict|pedantic|obsessive|old-fashioned|sensitive) about\b|"
        rf"\bmy (?:personal )?preferences? (?:is|are|would be)\b|\bthat's (?:how|what|the way) i (?:\w+)\b|"
        rf"\b(?:if|when|whenever) you (?:\w+ )?ever\b|\bif ever you\b|\b(?:when|whenever|every time|"
        rf"each time|if) i (?:ask|say|send|request|write|need|want|type|share|paste|mention)\b|\b(?:is|"
        rf"are) (?:really |very )?important to me\b|\bmatters? (?:a lot )?to me\b|"
        rf"\bi (?:\w+ )?find (?:[\w-]+ ){{0,4}}(?:easier|harder|better|worse|clearer|more \w+|less \w+)\b|"
        rf"\bi (?:really |just |honestly )?(?:can't|cannot) (?:deal with|handle|take|bear|stomach)\b",
    ),
    _rule(
        "preference",
        r"\bmy (?:personal )?(?:rule(?: of thumb)?|policy|principle|motto|habit|approach|philosophy)\b|"
        r"\bwhen(?:ever)? \w+ing\b[^.!?]{0,40}\bfor me\b|\btoo \w+ for me\b",
        soft=True,
    ),
    _rule(
        "preference",
        r"\bdefault(?:s)? to\b|\bthe (?:[\w-]+er|more|less|fewer) the (?:better|happier)\b",
    ),
    _rule(  # … should always / must never …
        "preference",
        r"\b(?:should|must|needs? to|has to|have to|to) (?:\w+ )?(?:always|never)\b",
    ),
    _rule(  # in every / all … reports, answers, emails
        "preference",
        r"\b(?:in|for|on|to|with) (?:every|all|each|any) (?:of )?(?:my |your |the |"
        r"our )?(?:[\w-]+ ){0,2}(?:report|answer|repl(?:y|ie)|response|email|message|summar(?:y|ie)|doc|"
        r"document|commit|pr|snippet|script|code|project|repo|meeting|file|table|chart|recipe|plan|draft|"
        r"translation|release|sprint|deploy|build|pr|merge|ticket|invoice|slide|deck|presentation)s?\b",
    ),
    _rule(  # keep answers short, … for me
        "preference",
        r"\bkeep (?:your |the |all |my )?(?:answers|replies|responses|explanations|summaries|messages|"
        r"emails|reports|things|it all)\b|\b(?:for me|to me)[,.]? (?:every time|always|please)\b",
    ),
    # Chinese preference
    _rule(
        "preference",
        rf"{_ZME}{_ZG}不?(?:喜欢|喜爱|偏好|偏爱|偏向|倾向|讨厌|厌恶|反感|受不了|忍不了|习惯|更愿意|愿意|"
        rf"宁愿|宁可|爱|最爱|爱吃|爱喝|爱用|爱看|用|碰|看不惯|看不上|接受不了|不感冒)(?!这|那|你的这|你这|"
        rf"了)",
        soft=True,
        statement=True,
    ),
    _rule(
        "preference",
        rf"{_ZME}(?:的)?(?:一般|通常|平时|平常|向来|一向|从来|从不|总是|一直(?!在)|每天|经常|常常|基本上|"
        rf"很少|习惯)",
        habitual=True,
        statement=True,
    ),
    _rule(
        "preference",
        rf"{_ZME}[^,。.!?]{{0,4}}?(?:基本都|基本上|一般都|通常都|都是|总是|从来不|从不)|"
        rf"{_ZME}[^,。.!?这那们]{{1,4}}?(?:喜欢|讨厌|习惯|不爱|偏好)(?!这|那)",
        habitual=True,
        statement=True,
    ),
    _rule("preference", r"记一下|记下来|帮我记(?:住|着)|你记着", soft=True),
    _rule(  # 我一看到长段落就头疼 (whenever …), 凡是给我的…都, 所有…都要
        "preference",
        rf"{_ZME}一[^,。.!?]{{1,8}}就|凡是|只要是[^,。]{{0,8}}(?:都|就)|所有[^,。.!?]{{0,8}}都(?:要|必须|得|"
        rf"请|用|按|在|走)|给我(?:写|做|发|推荐|找|挑|列)的[^,。]{{0,6}}(?:都|尽量|一律|要|请|别|不要)|"
        rf"{_ZME}只(?:吃|喝|用|坐|穿|住|买|听|看)|我(?:希望|想要|要求)[^。.!?]*(?:以后|每次|一直|永远|总是|"
        rf"所有)",
    ),
    _rule(
        "preference",
        r"(?:跟|和|对|给)我(?:说|讲|交流|沟通|用|回)(?!说|讲|一下|下)[^,。]{0,4}(?:中文|英文|英语|普通话|"
        r"粤语|日语|方言|繁体|简体|文言)",
    ),
    _rule("preference", r"我最喜欢的|我最爱的|我的最爱|我(?:比较|更|最)?喜欢的.{0,6}是"),
    _rule(  # 以后/今后 as "from now on", not 下班以后 ("after")
        "preference",
        r"(?:^|(?<=[,、:;!?.\"\s请那就所且记]))(?:以后|今后|往后|此后)(?!的|再说|再|会|可能|就知道|怎么|呢)|"
        r"从今以后|从今往后|从现在(?:开始|起)|从今天(?:开始|起)|从此",
    ),
    _rule("preference", r"(?<!的)默认(?!的|值|是多少|情况|设置)", statement=True),
    _rule(
        "preference",
        r"一律|统一(?:用|使用|采用|写|按|以|成|为)|永远(?:不要|别|不|都|要)|始终|(?<![它他她这那])每次都|"
        r"每次[^,。.!?]{0,8}都(?:请|帮我|给我|要|用|订|选|按|先|记得|别|不要)|(?<![它他她这那])每次(?:请|"
        r"给我|帮我|回答|回复|写|推荐|都要|记得|你)|请(?:一直|始终|总是|永远|务必|一律|统一)",
    ),
    _rule(  # 写周报的时候请… / 回答的时候不要…: "whenever you …"
        "preference",
        r"(?:回答|回复|答复|写|给我|推荐|总结|翻译|解释|汇报|发|整理|起名|命名|列|"
        r"做)[^,。.!?;]{0,10}(?:的时候|时)[,\s]?(?:请|不要|别|都|一定|记得|务必|尽量|永远|一直|只|要|先|用|"
        r"注意|优先|避开|按|把)",
    ),
    # ---- identity ------------------------------------------------------------------------------
    _rule(
        "identity",
        rf"\bmy name(?:'s| is)\b|\bmy names? (?:are|is)\b|\b(?:you can |just |please |people |everyone |"
        rf"friends )?call me (?!a |an |the |back|later|tomorrow|tonight|when|if |at |on |in |once|before|"
        rf"after|asap|again|now|please|up|\d|when)[\w'-]+(?=\s*(?:[,.;!]|$|,? (?:nobody|not|instead|please|"
        rf"for short|is)\b))|\bi go by\b|{_IM} called\b|\bmy pronouns\b",
    ),
    _rule(  # I'm a nurse / an engineer / a PhD student (not "a bit", "a little")
        "identity",
        rf"{_IM}{_G}(?:a|an) (?!bit\b|little\b|lot\b|few\b|moment\b|second\b|minute\b|sec\b|step\b|way\b|"
        rf"day\b|week\b|fan\b|big fan\b|huge fan\b|question\b|quick\b|total\b|complete\b|more\b|tea\b|"
        rf"coffee\b)[\w'-]+",
    ),
    _rule(
        "identity",
        rf"{_IM}{_G}(?:type \d |a )?(?:vegan|vegetarian|pescatarian|diabetic|allergic|asthmatic|epileptic|"
        rf"pregnant|married|single|divorced|widowed|retired|unemployed|self-employed|freelanc\w+|"
        rf"colou?r[- ]?blind|left[- ]handed|right[- ]handed|deaf|blind|dyslexic|autistic|lactose|gluten|"
        rf"celiac|coeliac|based in|originally|from|born|native|new to|studying|working (?:as|at|for|in)|"
        rf"living in|in my \w+s|a native)\b",
    ),
    _rule(  # self-introduction: "one thing about me", "hi, i'm maria"
        "identity",
        r"\b(?:thing|things|bit|fact|something|note|word) about (?:me|myself)\b|\babout me\s*:|^(?:hi|hello|"
        r"hey|hiya|good (?:morning|afternoon|evening))[,!.]? (?:there[,!.]? )?(?:i'm|i am|this is|it's|"
        r"my name's) [\w'-]+\s*[,.!]",
    ),
    _rule(
        "identity",
        rf"\bborn and (?:raised|bred)\b|^(?:born|raised|grew up|brought up) in\b|{_IM} the (?:only|sole|"
        rf"lead|main|senior|head|new|founder|owner|ceo|cto|cfo|manager|maintainer)\b",
    ),
    _rule(
        "identity",
        rf"\b(?:we're|we are|i'm|i am) expecting (?:a|our|my) (?:first |second |third )?(?:baby|child|"
        rf"kid)\b|{_IM} in my (?:first|second|third|fourth|final|last) year\b|\bi do freelance\b|\b(?:my|"
        rf"a) day job\b",
    ),
    _rule(  # I run a small bakery / I own a cafe / I founded a startup
        "identity",
        r"\bi (?:\w+ly )?(?:run|own|founded|co-founded|started|manage) (?:a|an|my|our|the|"
        r"my own) (?:[\w'-]+ ){0,2}(?:business|company|startup|shop|store|bakery|cafe|café|restaurant|bar|"
        r"studio|agency|firm|clinic|practice|team|lab|nonprofit|charity|blog|podcast|channel|newsletter|"
        r"farm|hotel|school|consultancy)\b",
    ),
    _rule(  # abilities and senses: I can't read tiny fonts / I use a screen reader
        "identity",
        r"\bi (?:can't|cannot|can not|am unable to|'m unable to) (?:read|see|hear|eat|drink|walk|drive|swim|"
        r"speak|type|stand for long|lift)\b|\bi (?:\w+ly )?(?:use|rely on) (?:a |an )?(?:screen reader|"
        r"wheelchair|hearing aid|cane|braille)|\b(?:just so you know|for the record|for your information|"
        r"you should know)[,:]? (?:i|i'm|i've|my|we|our)\b",
        soft=True,
    ),
    _rule(
        "identity",
        r"\bi(?:'ve| have)? (?:\w+ly )?(?:lived|grown up|been living) (?:in|abroad|overseas|here|there|"
        r"all over)\b|\b(?:most|all) of my life\b|\bmy (?:whole|entire) life\b",
    ),
    _rule(  # age
        "identity",
        rf"{_IM} \d{{1,2}}\b(?! ?(?:%|minutes?|mins?|hours?|hrs?|km|miles|m\b|pm|am|:|/|euros?|dollars?|"
        rf"pounds?))|\bi(?:'m| am) (?:\d{{1,2}}|[a-z]+ty(?:-[a-z]+)?) years? old\b",
    ),
    _rule(  # biography verbs
        "identity",
        rf"{_I}{_G}(?:live|lived|grew up|was born|was raised|moved|come from|teach|study|studied|speak|"
        rf"majored|graduated|work (?:as|at|for|in|on the|with|from home|remotely|nights|night shifts|"
        rf"part-time|full-time)|worked (?:as|at|for|in))\b",
        soft=True,
    ),
    _rule(
        "identity",
        rf"{_IV}{_G}(?:been|lived|worked|taught|studied)(?: (?:a|an|working|living|teaching|coding|"
        rf"programming|doing|in|at|as|here|there))?\b(?=[^.]*\b(?:for|since|years?|decades?|months?)\b)",
    ),
    _rule(  # health: I have a peanut allergy / I'm allergic to …
        "identity",
        rf"(?:{_I}|{_IV}|\bi've got)(?: have| got)?{_G}(?:a |an )?(?:[\w-]+[ -]){{0,3}}(?:allerg(?:y|ies)|"
        rf"intolerance|intolerant|condition|disability|disorder|diabetes|asthma|adhd|autism|dyslexia|"
        rf"migraines?|celiac|coeliac|epilepsy)\b|\ballergic to\b",
    ),
    _rule(
        "identity",
        rf"(?:{_I}|{_IV}|\bi've got)(?: have| got)?{_G}(?:a|an|two|three|\d) (?:\d+|\w+)-(?:year|"
        rf"month)-olds?\b(?! (?:laptop|car|phone|computer|machine|mac|bike|house|tv|printer))|\b(?:night|"
        rf"day|early|late|graveyard|split) shifts?\b(?=[^.!?]*\b(?:most|every|usually|always|weeks|"
        rf"nights)\b)|\bi work shifts\b",
    ),
    _rule(  # family and pets
        "identity",
        rf"(?:{_I}|{_IV}|\bi've got)(?: have| got)?{_G}(?:\d+|one|two|three|four|five|six|a|"
        rf"an) (?:[\w-]+ ){{0,2}}(?:kids?|children|child|sons?|daughters?|cats?|dogs?|brothers?|sisters?|"
        rf"siblings?|grand(?:children|kids)|pets?|twins|grandsons?|granddaughters?)\b",
    ),
    _rule(
        "identity",
        r"(?<!to )(?<!for )(?<!with )\bmy (?:wife|husband|partner|spouse|girlfriend|boyfriend|son|daughter|"
        r"kids|children|child|mum|mom|mother|dad|father|parents|brother|sister|dog|cat|baby|family|"
        r"twins)(?:'s name\b|'s \d| (?:is|are|has|have|just|was|lives|works|turned|turns|'s called)\b)",
        soft=True,
    ),
    _rule(
        "identity",
        r"\b(?:first|native|second|mother|home) (?:language|tongue)\b(?![^.!?]*\?)|\bmy (?:job|role|title|"
        r"position|profession|background|major|degree|hometown|home town|nationality|birthday)(?: is| as|"
        r"'s)\b",
    ),
    _rule(  # I run / lead / manage the … team
        "identity",
        rf"{_I}{_G}(?:run|lead|manage|head|own|am in charge of|look after)(?: the| a| our|"
        rf" my)? (?:[\w-]+ ){{0,3}}(?:team|group|department|org|division|company|business|shop|lab|practice|"
        rf"squad)\b",
    ),
    _rule(  # diet
        "identity",
        rf"{_I}{_G}(?:don't|do not|never|can't|cannot) (?:eat|drink|have) (?!it\b|that\b|this\b|anything\b)",
        soft=True,
    ),
    # Chinese identity
    _rule("identity", r"(?<![帮给替让为叫请和跟对])我叫(?![了的车个辆一过他她你人外代出醒起声])\S"),
    _rule(
        "identity",
        r"我的(?:英文|中文|小)?名(?:字)?(?:是|叫)|我的(?:英文|中文)?名字|我姓[^\s,是的]|(?:可以|就|直接|都|"
        r"请|以后)叫我(?![起一过去来吃回])",
    ),
    _rule(
        "identity",
        r"(?<![帮给替让为叫请和跟对])我(?:本人|自己)?是(?!不是|说|在|想|要|问|指|来|去|觉得|真的|因为|为了|"
        r"从|否|谁|这|那|什么|怎么|刚|第一次|故意|开玩笑|随便|认真)",
        soft=True,
    ),
    _rule(
        "identity",
        r"(?<![帮给替让为叫请和跟对])我(?:现在|目前|一直)?在[^,。.!?;的]{1,12}(?:工作|上班|上学|读书|念书|"
        r"长大|出生|生活|定居|任职|实习|做|当|教书|教|带|读|念|负责)",
    ),
    _rule(
        "identity",
        r"我(?:现在|目前|一直)?住在|我(?:们)?家(?:住|在)|我(?:刚|已经)?(?:结婚|离婚|订婚)|我(?:是)?单身|"
        r"我[^,。]{0,6}(?:留过学|留学|读过书|待过|住过|生活过|工作过)|我(?:的)?(?:老家|家乡|祖籍)|我来自|"
        r"我(?:出生|生)(?:在|于)|(?:在|从小在)[^,。]{1,8}长大",
    ),
    _rule(
        "identity",
        r"我[^。.!?]{0,12}(?:过敏|不耐受)|我有[^,。]{0,8}(?:病|症)(?!毒)|我有(?:轻度|重度|轻微|严重|慢性|"
        r"一点)?(?:高血压|低血压|高血糖|低血糖|糖尿|哮喘|近视|色弱|抑郁|焦虑|失眠|痛风|鼻炎|湿疹|胃炎|"
        r"偏头痛)|我(?:今年)?(?:\d{1,2}|[一二三四五六七八九十几]{1,3})岁|"
        r"我(?:今年)?(?:已经)?[二三四五六七八九]十[一二三四五六七八九]?了|我[^,。]{0,6}(?:退休|退伍)(?!账户|"
        r"金|年龄)|我[^,。]{0,8}(?:搬到|搬来|移居|定居|移民)|我(?:的)?(?:日常)?工作(?:主要)?是|"
        r"我[^,。.!?]{0,6}(?:专业|职业|岗位|职位|学历)是|我(?:刚|已经)?转行",
    ),
    _rule(
        "identity",
        r"(?:我(?:们)?家(?:里)?(?:有|养了|养着|养|是)?[一两二三四五六俩仨\d]+|我(?:有|养了|养着|"
        r"养)[一两二三四五六俩仨\d]*)(?:个|只|条|位)?(?:孩子|儿子|女儿|小孩|宝宝|猫|狗|兄弟|姐妹|哥哥|姐姐|"
        r"弟弟|妹妹)",
    ),
    _rule(
        "identity",
        r"(?<![帮给替让为叫请和跟对])我(?:的)?(?:老婆|老公|妻子|丈夫|爱人|太太|先生|女儿|儿子|孩子|父母|"
        r"爸爸|妈妈|爸|妈|对象|男朋友|女朋友|媳妇|宝宝)(?:都|也|一直)?(?:是|在|今年|叫|已经|刚|经常|上|每天|"
        r"也|有|[一二三四五六七八九十两\d]+岁)",
    ),
    _rule(
        "identity",
        r"我(?:从事|干|做|学|读|教|写)[^,。]{0,10}(?:已经|有|了)?(?:\d+|[一二三四五六七八九十几两多]+)年|"
        r"我(?:的)?(?:本科|研究生|硕士|博士|大学)[^,。]{0,4}(?:学|读|念|是)|我(?:负责|主管|管理)(?!一下)|"
        r"我的(?:职业|工作是|岗位|职位|角色|专业|母语|生日|团队是|星座|血型)|我(?:的)?母语",
    ),
    _rule(
        "identity",
        r"我(?:的)?(?:口味|作息|性格|脾气|饮食|体质)|怀孕|孕期|哺乳期|备孕|我(?:有)?(?:近视|远视|散光|色弱|"
        r"色盲)|我有(?:一)?个[^,。]{0,6}(?:孩子|儿子|女儿|小孩|宝宝|哥哥|姐姐|弟弟|妹妹)|我(?:本人|"
        r"自己)?是(?:做|搞|干|学|教)[^,。]{1,8}的",
    ),
    _rule(  # diet
        "identity",
        r"我(?:吃素|吃斋|不吃(?![了饭完吗])|不喝(?![了完吗])|戒了|不能(?:吃|喝)|没法(?:吃|喝))",
    ),
    _rule(  # self-characterisation, abilities and health: 我这人比较急, 我英语不太好, 我腰不好
        "identity",
        r"我这(?:个)?人|我是那种|我属于(?:那种)?|我(?:的)?(?:英语|英文|中文|日语|普通话|数学|视力|听力|眼睛|"
        r"耳朵|腰|膝盖|胃|肠胃|身体|心脏|颈椎|睡眠|记性|记忆力|酒量|牙|皮肤)(?:一直|比较|很|也|都|不太|"
        r"不是很|不)?(?:不好|不太好|很差|比较差|一般|很好|不错|不行|差|弱|有问题)",
    ),
    # ---- feedback ------------------------------------------------------------------------------
    _rule(  # No, … / Nope, wrong …
        "feedback",
        r"(?:^|(?<=[.!?,;:]\s)|(?<=actually,\s)|(?<=actually\s))(?:no|nope|nah|wrong|incorrect|not quite|"
        r"not really)(?=\s*[,.!:;\u2013\u2014-]|\s+(?:that|it|this|you|the|we|i|again|"
        r"no)\b)(?!\s*,?\s*(?:thanks|thank you|problem|worries|rush|need|idea|way|matter)\b)",
    ),
    _rule(
        "feedback",
        r"\b(?:that|this|your|the last)(?: answer| reply| response| one| code| fix| suggestion|"
        r" summary)?(?:'s| is| was)(?: not| still)?(?: quite| totally| completely| all| way| so| way|"
        r" a bit)? (?:wrong|incorrect|not right|not correct|inaccurate|a mistake|not true|false|the wrong|"
        r"not what|off|nonsense|useless|made up)\b|\bnot what i (?:asked|wanted|meant|said|need|needed)\b|"
        r"\bwrong again\b|\bgot (?:it|that|this) wrong\b|\byou misunderst\w+|\byou misread\b|"
        r"(?<!sorry, )\bi (?:said|asked for|wanted)\b(?=[^?!]{0,80}?\bnot\b)|\b(?:can|could|would|"
        r"will) you (?:please |pls )?stop \w+ing\b|\bi find (?:it|them|those|these|that|"
        r"such \w+) (?:\w+ )?(?:grating|annoying|distracting|irritating|patronising|patronizing|"
        r"condescending|confusing|hard to read|unreadable|useless|too much)\b|\byou (?:\w+ly )?(?:ignored|"
        r"forgot|skipped|dropped|broke|overwrote|deleted|removed|misspelled|misspelt) (?:my|the|our|what)\b|"
        r"\b(?:less|fewer) [\w-]+(?: [\w-]+)?,? (?:and )?more [\w-]+|\bmore [\w-]+,? (?:and )?(?:less|"
        r"fewer) [\w-]+|\btoo (?:long|short|verbose|wordy|much|many|formal|casual) again\b",
    ),
    _rule(
        "feedback",
        rf"\byou(?:'re| are){_G}(?:wrong|mistaken|over\w+ing|under\w+ing|being|making (?:it|this|things)|"
        rf"repeating|ignoring|missing|still|too)\b|\byou (?:keep|always|never|still|constantly|repeatedly|"
        rf"again|once again)\b(?! (?:can|could|need|want)\b)|\byou(?:'ve| have) (?:done|said|made|written|"
        rf"missed|forgotten|ignored|added|used)\b[^.!?]{{0,30}}\b(?:again|before|times|already)\b|"
        rf"\byou(?:'re| are) \w+ing\b[^.?]{{0,40}}\bagain\b",
    ),
    _rule(
        "feedback",
        rf"(?<!can )(?<!could )(?<!would )(?<!will )\byou\b[^.?]{{0,50}}\bagain\s*[.!]*$|"
        rf"\byour (?:[\w-]+ ){{1,2}}(?:are|is|were|was|keep|get|come out){_G}?too\b",
        statement=True,
    ),
    _rule(
        "feedback",
        r"\b(?:second|third|fourth|fifth|nth|umpteenth|\d+(?:st|nd|rd|th)) time (?:that )?you\b",
    ),
    _rule(
        "feedback",
        r"\byou (?:should|shouldn't|should not|must|mustn't|must not|need to stop|have to stop|"
        r"ought to)\b(?! (?:be able|have received|see|find)\b)",
    ),
    _rule(
        "feedback",
        rf"{_I} (?:told|asked) you\b|{_IV} (?:told|asked) you\b|\bas i (?:said|told you|mentioned)\b|"
        rf"\bhow many times\b|\bi (?:didn't|did not|never) ask(?:ed)? (?:for|you)\b",
    ),
    _rule(  # stop apologising / don't … ever / again
        "feedback",
        rf"{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:stop|quit|no more) \w+ing\b|\b(?:don't|do not|"
        rf"never)\b[^.!?]{{0,60}}\b(?:ever|again|anymore|any more)\b|\bdon't ever\b|(?:^|\b(?:i |"
        rf"just ))(?:hate|dislike|can't stand) it when\b",
    ),
    _rule(  # please don't + verb (a behaviour of the assistant)
        "feedback",
        rf"{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:don't|do not) (?!worry|forget|mind)\w+",
        soft=True,
    ),
    _rule(
        "feedback",
        rf"\btoo (?:verbose|wordy|long-winded|chatty|formal|informal|casual|terse|vague|generic|repetitive|"
        rf"robotic|preachy)\b|\b(?:answers?|repl(?:y|ies)|responses?|explanations?|messages?|summar(?:y|"
        rf"ies)) (?:are|is|were|was|get|getting|keep being)?{_G}too (?:long|short|much|many|detailed|"
        rf"brief)\b|(?:^|[,.!;]\s*)too (?:long|short|much)\s*[.!,]",
    ),
    _rule(
        "feedback",
        r"\bnext time\b(?=[,:]|\s+(?:you|please|ask|check|don't|do|try|make|use|remember|just|always|never|"
        r"be|first|before|when)\b)",
    ),
    _rule(
        "feedback",
        rf"{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:remember|keep in mind|bear in mind|make a note|"
        rf"note)(?: that| this|,|:| to\b| i\b)|{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:keep|"
        rf"bear) in mind\b|\b(?:remember|keep in mind|note) (?:that|this)\s*[.!]?$|\bremember that\b",
    ),
    # Chinese feedback
    _rule(
        "feedback",
        rf"{_ZCS}(?:不对|不是的|不是这样|错了|你错了|说错了|搞错了|弄错了|你理解错了)(?![吗吧?])",
    ),
    _rule("feedback", r"你(?:又|总是|老是|每次|一直|怎么又|总)(?!在)"),
    _rule(
        "feedback",
        r"(?:别|不要|不许|不准)(?:再|老|总|每次|总是|老是|一直|动不动|擅自|自作主张|随便|乱|私自)",
    ),
    _rule(
        "feedback",
        r"这不是我(?:要|想要|问|说|需要)的|我(?:没|没有|并没有|又没|不是)(?:让你|叫你|要你|要求)|你(?:写|给|"
        r"说|做|推荐|翻译|回答)的[^,。]{0,6}(?:总是|老是|每次都|经常|一直)|我不是(?:这个)?意思|我说的是|"
        r"我的意思是|说过(?:很多次|多少次|好几次|几次|了)|跟你说过|告诉过你",
    ),
    _rule("feedback", r"下次[^,。.!?]{0,10}(?:先|请|记得|别|不要|注意|务必|直接|一定|一点|一些|就)"),
    _rule("feedback", r"第[二三四五六七八九十几\d]+次(?:了|用|把|这样|犯)|又一次"),
    _rule(
        "feedback",
        rf"(?:回答|回复|答案|代码|邮件|文档|报告|解释|总结|翻译)(?:里|中|里面)?(?:别|不要|不许|不能|少|"
        rf"尽量别)|(?:结论|答案|回答|说法|结果|数字|数据|计算|翻译|单位|日期|你说的|你写的|你给的)(?:是|又|"
        rf"也|完全|都)?(?:错|不对)(?:的|了)?(?![吗吧?])|说了(?:多少|很多|好几|几)(?:遍|次)|(?:我问的|我要的|"
        rf"我说的)(?:不是|并不是)|能不能(?:简洁|简短|短|少说|直接|别|不要)|{_ZCS}又(?:是|来|把|写|忘|错)",
    ),
    _rule(
        "feedback",
        rf"(?:回答|回复|答案|解释|语气|口吻|风格|格式|你|写得|说得|讲得|解释得|篇幅|{_ZCS})(?:的)?(?:有点|"
        rf"太|过于|实在太|也太)(?:长|啰嗦|啰唆|罗嗦|冗长|多了|复杂|繁琐|简略|短|正式|生硬|官方|笼统|机械)",
    ),
    _rule("feedback", rf"{_ZCS}(?:请)?记住|记好了|记得(?:以后|下次|每次)"),
    _rule("feedback", r"(?<![他她它])你(?:应该|应当|必须|得)(?!是|也|会|知道|可以|能|没|已经|不会|还|很)"),
    # ---- project -------------------------------------------------------------------------------
    _rule(
        "project",
        rf"\b(?:all (?:of )?)?our (?:[\w'-]+ ){{0,2}}(?:team|project|company|org|organi[sz]ation|repos?|"
        rf"repository|codebase|services?|product|app|stack|client|customer|deadline|release|sprint|database|"
        rf"db|cluster|infra|infrastructure|staging|production|prod|ci|pipeline|backend|frontend|api|"
        rf"department|dept|stand-?up|office|year|style guide|conventions?|process|workflow|policy|budget|"
        rf"roadmap|launch|servers?|environment|vendor|manager|boss|lead|cto|ceo|teams|code)(?:'s)?{_G}(?:is|"
        rf"are|uses|use|used|runs|run|deploys|deploy|has|have|lives|live|moved|switched|migrated|ships|ship|"
        rf"releases|follows|follow|requires|require|needs|starts|start|ends|happens|meets|meet|prefers|"
        rf"wants|expects|relies|rely|sits|sit|will|was|were|'s|only|always|never|doesn't|don't|can't|must|"
        rf"should|log|write|store|talk|go|went|got)\b",
        statement=True,
    ),
    _rule(  # our <any noun> is/uses …, except the logistics of a task at hand
        "project",
        r"\bour (?!(?:[\w'-]+ )?(?:flights?|trains?|table|rooms?|hotel|reservations?|bookings?|orders?|trip|"
        r"taxi|car|ride|luggage|bags?|seats?|tickets?|meeting|call|lunch|dinner|breakfast|plans|way|turn|"
        r"food|waiter|guide|gate|bus|cab|uber|driver|pizza|delivery|package|parcel|"
        r"time)\b)(?:[\w'-]+ ){1,2}(?:is|are|uses|runs|lives|has|is called|is named|signs off|owns|handles|"
        r"decides)\b",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        r"\bwe(?:'re| are) (?:using|running|moving to|migrating|switching|standardi[sz]ing|"
        r"on (?:[\w.-]+ )?\d)|\b(?:sprint|release|deadline|launch|standup|stand-up|retro|demo|freeze|"
        r"cadence|length|schedule|policy|process|version|branch|review|planning|on-?call|"
        r"rotation)s? (?:has |was |got |is )?(?:changed|moved|switched|slipped|shifted|pushed|postponed|"
        r"rescheduled|brought forward|bumped)(?: back)? to\b",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        r"^(?:staging|prod|production|pre-?prod|dev|qa|uat|ci|the ci|main|master|the main branch|"
        r"trunk) (?:is|are|runs|lives|uses|sits|deploys|builds|points)\b|\bwe(?:'re| are) (?:mostly |"
        r"primarily |basically )?an? (?!group|party|family|couple|bit|little|few|lot|"
        r"team of \d)[\w-]+ (?:shop|house|company|team|startup|org|agency|place)\b|\b(?:meets?|ships?|"
        r"releases?|deploys?|runs?|happens?|reports?|syncs?|reviews?|bills?|invoices?) (?:quarterly|weekly|"
        r"monthly|daily|yearly|annually|bi-?weekly|fortnightly|nightly)\b",
        statement=True,
    ),
    _rule(
        "project",
        r"\b(?:must|has to|have to|is required to|are required to)\b[^.!?]{0,30}\b(?:anything|everything|"
        r"every|all|any)\b|\b(?:anything|everything|every \w+|all \w+)\b[^.!?]{0,30}\b(?:must|has to|"
        r"have to|needs to)\b|^(?:heads[- ]up|fyi|psa|for the record)\b[,:]",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        r"\bthe (?:[\w-]+ )?(?:warehouse|database|db|backend|frontend|app|api|stack|cluster|servers?|ci|"
        r"pipeline|repo|monorepo|codebase|infra|cloud|gateway|queue|cache|cdn|orm|framework|"
        r"data lake) (?:is|are|runs|uses|lives|sits)\b|\bour (?:[\w-]+ ){0,2}(?:rules?|policy|policies|"
        r"conventions?|process|standards?|guidelines?|setup|stack)\s*(?::|$)|^(?:quick |some |for |"
        r"a bit of |background |project )?context\b\s*[,:]",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        rf"\bwe{_G}(?:use|deploy|ship|release|run|host|follow|switched|moved|migrated|agreed|decided|"
        rf"standardi[sz]ed|only|always|never|usually|don't use|do not use|rely|require|store|keep|build|"
        rf"work in|pay|meet|have a (?:policy|rule|convention)|write|log|freeze|code in|develop)\b",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        rf"\bthe (?:deadline|due date|release|launch|go-live|code freeze|release freeze|merge freeze|freeze|"
        rf"demo|milestone|cutover|kick-?off|sprint|retro|audit|handover|rollout)(?: date)?{_G}(?:is|was|has|"
        rf"had|moved|slipped|got|will|'s|starts|ends|happens|changed|shifted|now)\b|\b(?:deadline|launch|"
        rf"release|go-live|freeze|rollout|demo) (?:has |was |got |is )?(?:moved|slipped|pushed|postponed|"
        rf"brought forward|delayed|rescheduled|shifted)\b",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        r"\bthe (?:client|customer|project|product|repo|codebase|team|company|"
        r"stakeholder)(?:'s [\w-]+)? (?:is called|is named|uses|is|are|needs|wants|requires|expects|prefers|"
        r"runs|decided|agreed|chose|voted|switched|moved|standardi[sz]ed|dropped)\b|\b(?:is|"
        r"are) (?:the )?(?:code ?owners?|owner|tech lead|point of contact|in charge of|responsible for)|"
        r"\b(?:in|for) this (?:repo|codebase|project|team|org|company),? we\b|\bowns (?:the|our|all)\b",
        soft=True,
        statement=True,
    ),
    # Chinese project
    _rule(
        "project",
        rf"我们(?:的)?(?:{_ZADV})*(?:用|使用|采用|跑在|部署在|基于|决定|规定|约定|要求|遵循|每周|每月|每天|"
        rf"每个|只在|才|封版|发版|从来|的(?:主|核心)?(?:数据库|仓库|代码|服务|项目|产品|客户|技术栈|集群|"
        rf"环境|财年|规范))|我们(?:的)?(?:组|团队|部门|公司|项目|项目组|小组|这边|那边|仓库|team|产品|服务|"
        rf"系统|客户|用户)(?:的)?[^,。.!?;]{{0,6}}?(?:{_ZADV})*(?:用|使用|采用|跑在|部署在|基于|决定|规定|"
        rf"约定|要求|遵循|每周|每月|每天|只在|才|封版|发版|从|是|在|上线|迭代|开始|固定|定期)",
        statement=True,
    ),
    _rule(  # 我们的发布窗口是…, except the logistics of a task at hand
        "project",
        r"我们(?:的|这边的|组的|团队的|公司的|部门的)(?![^,。]{0,4}(?:航班|火车|高铁|座位|房间|酒店|车|票|"
        r"饭|午饭|晚饭|桌|行程|位子|计划|时间))[^,。.!?;]{1,8}?(?:是|用|在|改|都|走|定在|放在)(?!不是|哪|"
        r"什么|几)",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        r"截止(?:日期|时间)?[^,。?]{0,4}?(?:改|推迟|延期|提前|定在|变成|调整|是|在)|(?:上线|发版|发布|封版|"
        r"交付|验收|演示|评审)(?:时间|日期)?(?:推迟|延期|提前|改|定在|调整|挪)|(?:项目|产品|系统|服务|仓库|"
        r"公司)(?:代号|名称|名字)?(?:叫|是)|(?:挪|改|调|移|换)到(?:了)?每(?:周|月|天)|客户是|负责人是|"
        r"由[^,。]{1,6}(?:负责|审批|审核|拍板|决定|维护)|(?:公司|团队|部门|领导|老板|客户|项目|组长|"
        r"经理)(?:规定|要求|约定|统一)|(?:这个|我们的?|本)(?:产品|项目|服务|系统|仓库|应用|"
        r"平台)的[^,。.!?]{0,6}(?:是|叫|用|在)|我们[^,。.!?;]{0,10}(?:改用|换成|迁移到|切换到|统一用|一直用|"
        r"都用)|(?:组里|团队里|公司里|部门里|我们这里|我们这边)(?:规定|要求|约定|统一|一直|都)|(?:测试|生产|"
        r"预发|线上|开发)环境(?:在|是|用|部署在)|代码冻结|封版|用的是|归[^,。]{1,6}管|^(?:项目)?背景\s*[:,]",
        soft=True,
        statement=True,
    ),
)


# English only: in a turn that asks nothing (no "?", no "can you…", "please", or imperative), a
# first-person declarative sentence ("I coach my son's team on Saturdays") that is not a want
# (I need / 'd like / am looking for…), not in the progressive ("I'm running late") and not about
# the here and now counts as a preference cue. Not used for Chinese, where first-person context is
# too common in task requests (我在地铁上…, 我们下周去杭州…) for the open-rate budget.
_FIRST_PERSON = _Lazy(
    r"^(?:(?:also|btw|by the way|and|but|so|ok|okay|oh|fyi|honestly|actually|thanks|thank you|good to know|"
    r"small thing|one more thing|just so you know|for the record|for context|context|note|ps|"
    r"p\.s\.)[,.!:]?\s+)*(?:i|i'm|i am|i've|my|we|we're|we've|our)\b(?!'d (?:like|love to|want|need|"
    r"rather not|be grateful|appreciate)| would (?:like|love to|appreciate))(?!(?:'m| am|'re| are| was|"
    r" were)? \w+ing\b)(?!(?:'m| am| was| were|'ve| have| had|'re| are)? (?:need|needs|want|wants|'d like|"
    r"would like|looking|trying|getting|having|going|gonna|wondering|thinking|stuck|confused|lost|not sure|"
    r"unsure|curious|done|back|ready|here|there|at|in|on|off|a bit|a little|kind of|sort of|planning|hoping|"
    r"about to|still|just|got|get|can't|cannot|couldn't|can|could|have a|have an|had|will|'ll|would|wanted|"
    r"must|should|think|guess|hope|wonder|forgot|found|saw|heard|tried|ran|ordered|booked|missed|sent|"
    r"received|bought|paid|asked|called|told|left|arrived|landed|started|finished|made|wrote|did|didn't|"
    r"don't know|do not know|wonder|feel|felt|believe|suppose|assume|noticed|realised|realized|see|agree|"
    r"meant|mean|prefer not|apologi[sz]e|sorry|fine|ok|okay|good|great|glad|happy|afraid|late|early|busy|"
    r"free|flight|train|order|booking|reservation|ticket|package|computer|laptop|phone|code|script|function|"
    r"app|build|test)\b)"
)
_REQUEST = _Lazy(
    r"\?|\b(?:can|could|would|will) you\b|\bplease\b|\bpls\b|(?:^|[.!;,:]\s*)(?:help|find|book|show|give|"
    r"tell|make|write|draft|plan|get|send|check|fix|translate|summari[sz]e|explain|create|add|remove|list|"
    r"order|schedule|remind|convert|compare|recommend|suggest|look up|search|buy|reserve|call|email|text)\b"
)


# The one cue that needs letter case: "I'm Tomás", "I'm Canadian" (a name, nationality or language after
# I'm) against "I'm sorry", "I'm OK". Read on the prose before case-folding.
_CASED_IDENTITY = _Lazy(
    r"\bI(?:'m| am) (?!(?:OK|Ok|Okay|Sorry|Not|So|Just|Back|Done|Fine|Here|There|Really|Still|Also|In|On|At|"
    r"A|An|The|Very|Good|Glad|Happy|Sure|Afraid|Going|Sad|Tired|Hungry|Ready|Late|Away|Busy|Free|"
    r"New)\b)(?![A-Z]\w*ing\b)[A-Z][a-z\u00c0-\u024f'-]+\b"
)


def _kinds_in(sentence: str) -> set[str]:
    found: set[str] = set()
    one_off = durable = question = None
    for rule in _RULES:
        if rule.kind in found or not rule.pattern.search(sentence):
            continue
        if rule.habitual and _NOW.search(sentence):
            continue
        if rule.durable and not _DURABLE.search(sentence):
            continue
        if rule.soft:
            if one_off is None:
                one_off = bool(_ONE_OFF.search(sentence))
                durable = bool(_DURABLE.search(sentence))
            if one_off and not durable:
                continue
        if rule.statement:
            if question is None:
                question = bool(_QUESTION.search(sentence))
            if question:
                continue
        found.add(rule.kind)
    return found


def _english_first_person(sentence: str) -> bool:
    return bool(_FIRST_PERSON.search(sentence)) and not _ONE_OFF.search(sentence)


def find_cues(texts: Iterable[str]) -> list[str]:
    """The kinds of cue (in CUE_KINDS order) that occur in any of the given user turns."""
    found: set[str] = set()
    for text in texts:
        own = prose(text)
        if _CASED_IDENTITY.search(own):
            found.add("identity")
        folded = _BARE_CONTRACTION.sub(_apostrophe, own.casefold())
        asks = bool(_REQUEST.search(folded))
        for sentence in sentences(folded):
            found |= _kinds_in(sentence)
            if not found and not asks and _english_first_person(sentence):
                found.add("preference")
            if len(found) == len(CUE_KINDS):
                return list(CUE_KINDS)
    return [kind for kind in CUE_KINDS if kind in found]
